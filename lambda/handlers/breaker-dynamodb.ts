import type { Context } from 'aws-lambda';
import { breakerFromConfig } from '../breaker/breaker-from-config.ts';
import { runBreaker } from '../breaker/run-breaker.ts';
import { loadConfig } from '../config.ts';
import { ConfigError } from '../errors.ts';
import { dynamoStoreFromConfig } from '../stores/dynamodb/dynamo-store-from-config.ts';
import { probeDynamoStore } from '../stores/dynamodb/probe-dynamo-store.ts';

// Cold start: configuration is read and validated once; the client and the breaker's state live at module scope,
// so one warm environment (reserved concurrency 1) carries the state from one scheduled run to the next.
const config = loadConfig();
if (config.store.kind !== 'dynamodb') {
  throw new ConfigError(
    'The DynamoDB breaker needs WORKER_STORE=dynamodb and DYNAMODB_TABLE; for the PostgreSQL store deploy lambda/handlers/breaker.ts',
  );
}
const { breaker: settings } = config;
const store = dynamoStoreFromConfig(config.store);
// The store's own probe (one GetItem, aborted at the timeout): it fails where the worker's calls fail — the table
// unreachable or gone, the role refused, requests throttled past the SDK's retries.
const breaker = breakerFromConfig(settings, () =>
  probeDynamoStore(store, config.consumer, settings.probeTimeoutMs),
);

/**
 * The breaker of the DynamoDB store's Lambda worker, invoked every minute (EventBridge): as the PostgreSQL
 * breaker, it disables the worker's event source mapping while DynamoDB does not answer its probe and enables it
 * again (half-open, then the configured scaling) once probes succeed; a poison message never trips it (the probe
 * reads no message); while it is closed, with `CONCURRENCY_ADAPTIVE=true`, it moves the mapping's
 * `MaximumConcurrency` from the worker's signals of load.
 */
export const handler = async (_event: unknown, context: Context) => {
  const until = Date.now() + context.getRemainingTimeInMillis() - settings.runGuardMs;
  const state = await runBreaker(breaker, { until, intervalMs: settings.checkIntervalMs });
  return { status: state?.status, held: state?.held ?? false };
};
