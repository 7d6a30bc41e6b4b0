/**
 * The child process of the payload-memory bench (`payload-memory.ts` bundles it as the stack bundles a worker and
 * runs it with Lambda's V8 flags): a worker made by `createWorkerFromConfig` from the environment, as a deployed
 * entry file makes it. It handles a warm-up event (one small `payloadRef`: the S3 chunk loaded, the connections
 * open), then the measured event, and writes one JSON object to the file named by its second argument: RSS after
 * the cold start, after the warm-up (the baseline), and the peak.
 *
 * The peak is the kernel's high-water mark of this process's memory (`VmHWM` in /proc/self/status), which starts
 * anew at exec. Not `process.resourceUsage().maxRSS`: Linux carries the high-water mark of the process that spawned
 * the child over into it, so the bench's own memory (the objects fauxqs holds) would show as the worker's.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import type { SQSEvent } from 'aws-lambda';
import { createWorkerFromConfig } from '../../lambda/stores/postgres/index.ts';
import { lambdaContext } from '../local/lambda-context.ts';
import { benchPayloadHandlers } from './bench-payload-shapes.ts';

const MIB = 1024 * 1024;

/** The peak RSS of this process so far, in bytes (`VmHWM`, kB in the file). */
function highWaterMark(): number {
  const status = readFileSync('/proc/self/status', 'utf8');
  const kb = /^VmHWM:\s+(\d+) kB$/m.exec(status)?.[1];
  if (kb === undefined)
    throw new Error('/proc/self/status has no VmHWM line: the payload-memory bench needs Linux');
  return Number(kb) * 1024;
}
// argv: the file of the events, the file to write the figures to.
const spec = JSON.parse(readFileSync(process.argv[2] as string, 'utf8')) as {
  warmup: SQSEvent;
  measured: SQSEvent;
};
const handler = createWorkerFromConfig({ handlers: benchPayloadHandlers });
const coldRss = process.memoryUsage().rss;
const context = () => lambdaContext({ functionName: 'payload-memory-bench', timeoutMs: 120_000 });
const warm = await handler(spec.warmup, context());
const baselineRss = process.memoryUsage().rss;
const baselinePeak = highWaterMark();
const measured = await handler(spec.measured, context());
const peakRss = highWaterMark();
writeFileSync(
  process.argv[3] as string,
  JSON.stringify({
    coldMiB: coldRss / MIB,
    baselineMiB: baselineRss / MIB,
    baselinePeakMiB: baselinePeak / MIB,
    peakMiB: peakRss / MIB,
    failures: warm.batchItemFailures.length + measured.batchItemFailures.length,
  }),
);
process.exit(0);
