import { FARGATE_RUNTIME_KEYS } from './runtimes/fargate/fargate-runtime-props.ts';
import { LAMBDA_RUNTIME_KEYS } from './runtimes/lambda/lambda-runtime-props.ts';
import type { SqsDatabaseWorkerProps } from './sqs-database-worker-props.ts';
import { DYNAMODB_STORE_KEYS } from './stores/dynamodb/dynamodb-store-props.ts';
import { POSTGRES_STORE_KEYS } from './stores/postgres/postgres-store-props.ts';
import type { WorkerSettings } from './worker-settings.ts';

const STORE_KEYS: ReadonlySet<string> = new Set([...POSTGRES_STORE_KEYS, ...DYNAMODB_STORE_KEYS]);
const RUNTIME_KEYS: ReadonlySet<string> = new Set([...LAMBDA_RUNTIME_KEYS, ...FARGATE_RUNTIME_KEYS]);

/**
 * The construct's props as flat settings (a `cdk.json` stage's shape): the axes' settings beside the common ones,
 * `store` and `runtime` as their kinds. The checks read this shape, so a setting of the other store or runtime
 * that a JavaScript caller (or a stage) put on an axis is refused by name rather than dropped.
 *
 * @internal
 */
export function flattenWorkerProps(props: SqsDatabaseWorkerProps): WorkerSettings {
  const { store, runtime, ...common } = props;
  const { kind: storeKind, ...storeSettings } = store ?? { kind: 'postgres' };
  const { kind: runtimeKind, ...runtimeSettings } = runtime ?? { kind: 'lambda' };
  return {
    ...common,
    ...storeSettings,
    ...runtimeSettings,
    ...(store && { store: storeKind }),
    ...(runtime && { runtime: runtimeKind }),
  };
}

/**
 * Flat settings (a `cdk.json` stage) as construct props: each setting goes to the axis it belongs to, whatever the
 * stage's store and runtime — a setting of the other store stays on the store, where the synth refuses it by name.
 *
 * @internal
 */
export function workerPropsFromSettings(settings: WorkerSettings): SqsDatabaseWorkerProps {
  const common: Record<string, unknown> = {};
  const store: Record<string, unknown> = { kind: settings.store ?? 'postgres' };
  const runtime: Record<string, unknown> = { kind: settings.runtime ?? 'lambda' };
  for (const [key, value] of Object.entries(settings)) {
    if (key === 'store' || key === 'runtime' || value === undefined) continue;
    const axis = STORE_KEYS.has(key) ? store : RUNTIME_KEYS.has(key) ? runtime : common;
    axis[key] = value;
  }
  // Untyped input: the kinds and the keys are checked at synth (resolveWorkerSettings), as for a JavaScript caller.
  return { ...common, store, runtime } as unknown as SqsDatabaseWorkerProps;
}
