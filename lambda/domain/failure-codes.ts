/** Failure codes the example domain's handlers throw (a leaf module: no logic, no imports). */
export const EXAMPLE_FAILURE_CODES = [
  /** Terminal: a stage without an SLA (`CaseDeadlineCalculationRequested`). */
  'INVALID_STAGE',
  /** Retryable by default (the case may arrive later); terminal when the producer lists it in `terminalAfterCodes`. */
  'CASE_NOT_FOUND',
  /** Terminal: a `DocumentMetadataExtractionRequested` handler that was given no document bytes. */
  'DOCUMENT_MISSING',
] as const;
