/** Types derived from the leaf constants (lambda/constants.ts). A leaf module: types only. */
import type { COMMIT_MODES, METRIC_NAMES, TERMINAL_POLICIES } from './constants.ts';

/** `quarantine` (store and acknowledge) or `dlq` (report until SQS moves it). */
export type TerminalPolicy = (typeof TERMINAL_POLICIES)[number];

/** `per-message` (one transaction per record) or `per-batch` (one per batch). */
export type CommitMode = (typeof COMMIT_MODES)[number];

/** Name of an EMF metric the worker or the relay emits. */
export type MetricName = (typeof METRIC_NAMES)[keyof typeof METRIC_NAMES];
