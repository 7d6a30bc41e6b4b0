/**
 * When an inbox item was last seen, in epoch milliseconds: the latest of `lastSeenAt` (a counted duplicate),
 * `startedAt` (the gate or a takeover), `completedAt` and `failedAt`; NaN when it has none of them. DynamoDB's items
 * keep no `last_seen_at` of every delivery as PostgreSQL's rows do.
 *
 * @internal
 */
export function dynamoItemSeenMs(item: Readonly<Record<string, unknown>>): number {
  const times = [item.lastSeenAt, item.startedAt, item.completedAt, item.failedAt]
    .map((at) => (typeof at === 'string' ? Date.parse(at) : Number.NaN))
    .filter((ms) => !Number.isNaN(ms));
  return times.length > 0 ? Math.max(...times) : Number.NaN;
}
