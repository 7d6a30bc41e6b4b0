-- Reserved for the migration another branch adds as 00009 (migration numbering must be contiguous). Drop this
-- file when merging after that branch: its own 00009 replaces it.
select 1;
