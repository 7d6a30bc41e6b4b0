import { BatchProcessor, EventType } from '@aws-lambda-powertools/batch';
import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import * as z from 'zod/mini';

/**
 * What the worker's libraries cost at cold start, for the bench's floors (`cold-floor-libraries-*.ts`): Powertools
 * Logger, Metrics and the SQS batch processor made, and a zod schema built, as every worker does before its first
 * record.
 */
export function makeLibraries(): readonly unknown[] {
  const logger = new Logger({ serviceName: 'case-worker', persistentKeys: { workerVersion: 'floor' } });
  const metrics = new Metrics({ namespace: 'SqsInboxWorker', serviceName: 'case-worker' });
  const processor = new BatchProcessor(EventType.SQS);
  const schema = z.object({
    caseId: z.string().check(z.minLength(1), z.maxLength(200)),
    effectiveAt: z.iso.datetime({ offset: true }),
  });
  return [logger, metrics, processor, schema];
}
