import { Annotations } from 'aws-cdk-lib';
import type { Construct } from 'constructs';
import type { ResolvedWorkerSettings } from './resolve-worker-settings.ts';
import type { WorkerSettings } from './worker-settings.ts';

/**
 * The synth's account of the worker's capacity: an info annotation with the capacity formula's explanation and
 * the scaling it chose (concurrency, provisioned pollers or Fargate tasks, and the store's share), and a warning
 * when nothing reserves concurrency.
 *
 * @internal
 */
export function annotateCapacity(
  scope: Construct,
  props: WorkerSettings,
  settings: ResolvedWorkerSettings,
): void {
  const capacityNote = settings.capacity
    ? settings.capacity.explanation
    : 'capacity not computed (a capacity input is a deploy-time token)';
  const tasks = settings.poller;
  const reservedNote = tasks
    ? ''
    : `, reservedConcurrency ${settings.reservedConcurrency ?? 'none (reserveConcurrency false)'}`;
  const storeNote =
    settings.store === 'dynamodb'
      ? `store dynamodb (on-demand table, ${tasks ? "the poller's tasks in the vpc" : 'no VPC'})`
      : `proxy maxConnectionsPercent ${settings.proxyMaxConnectionsPercent} of dbMaxConnections ${settings.dbMaxConnections}`;
  Annotations.of(scope).addInfo(
    `${capacityNote}; ${scalingNote(props, settings)}${reservedNote}, ${storeNote}`,
  );
  if (!settings.reserveConcurrency) warnNoReservedConcurrency(scope, props, settings);
}

/** How the worker scales: its Fargate tasks, its provisioned pollers, or the event source's maximum concurrency. */
function scalingNote(props: WorkerSettings, settings: ResolvedWorkerSettings): string {
  const tasks = settings.poller;
  const pollers = settings.provisionedPollers;
  if (tasks) {
    const each =
      settings.store === 'dynamodb'
        ? `${settings.recordConcurrency} records`
        : `${settings.dbPoolSize} connections`;
    return `Fargate tasks ${tasks.minTasks}–${tasks.maxTasks}${props.maxTasks === undefined ? ' (derived)' : ''} of ${each} each (${tasks.minTasks} always on)`;
  }
  if (pollers) {
    return `provisioned pollers ${pollers.minimumPollers}–${pollers.maximumPollers}${props.maximumPollers === undefined ? ' (derived)' : ''} (${pollers.minimumPollers} always on)`;
  }
  return `maxConcurrency ${settings.maxConcurrency}${props.maxConcurrency === undefined ? ' (derived)' : ''}`;
}

/** `reserveConcurrency: false`: what goes unprotected, and when to turn it back on. */
function warnNoReservedConcurrency(
  scope: Construct,
  props: WorkerSettings,
  settings: ResolvedWorkerSettings,
): void {
  if (settings.poller) {
    const jobs = [props.outboxRelay ?? true, props.healthCheck ?? true, settings.retention].filter(Boolean);
    Annotations.of(scope).addWarningV2(
      'sqs-inbox-worker:no-reserved-concurrency',
      `reserveConcurrency is false: the outbox relay and the scheduled jobs reserve no concurrency, so other functions of the account can throttle them; set reserveConcurrency true once the account's concurrency quota leaves 100 unreserved executions after ${jobs.length}`,
    );
    return;
  }
  Annotations.of(scope).addWarningV2(
    'sqs-inbox-worker:no-reserved-concurrency',
    `reserveConcurrency is false: the worker${(props.outboxRelay ?? true) ? ' and the outbox relay' : ''} reserve no concurrency, so other functions of the account can take what the worker needs (maxConcurrency ${settings.maxConcurrency} still bounds it); set reserveConcurrency true once the account's concurrency quota leaves 100 unreserved executions after ${settings.maxConcurrency + 1}`,
  );
}
