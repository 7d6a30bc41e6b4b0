import { Console } from 'node:console';
import { Writable } from 'node:stream';
import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';

/** A stream that accepts and drops everything. */
const discard = () =>
  new Writable({
    write(_chunk, _encoding, callback) {
      callback();
    },
  });

/**
 * A Powertools Logger (level INFO) and Metrics that do all their work — building and serializing every log
 * line and EMF document as in Lambda — but write to a discarding stream instead of stdout, so the bench pays
 * the telemetry's CPU cost without flooding its own output. `onRecord` sees the fields of every record's log
 * line (the engine writes one per record, with `processingMs`).
 */
export function quietTelemetry(serviceName: string, onRecord: (fields: Record<string, unknown>) => void) {
  const quiet = new Console({ stdout: discard(), stderr: discard() });
  const logger = new Logger({ serviceName, logLevel: 'INFO' });
  const metrics = new Metrics({ namespace: 'SqsInboxWorkerBench', serviceName });
  // Powertools keeps its Console in a private field; replacing it is the only way to redirect the output.
  (logger as unknown as { console: Console }).console = quiet;
  (metrics as unknown as { console: Console }).console = quiet;
  const info = logger.info.bind(logger);
  logger.info = ((input: string, ...extra: Record<string, unknown>[]) => {
    if (extra[0]) onRecord(extra[0]);
    info(input, ...extra);
  }) as Logger['info'];
  return { logger, metrics };
}
