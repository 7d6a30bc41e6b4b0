import { exampleHandlers } from '../../lambda/domain/index.ts';
import { loadPollerConfig } from '../../lambda/runtimes/poller/poller-config.ts';
import type { PollerEvent } from '../../lambda/runtimes/poller/start-poller.ts';
import { startPollerFromConfig } from '../../lambda/runtimes/poller/start-poller-from-config.ts';
import type { ConsumerSide } from './queue-run.ts';
import { quietTelemetry } from './quiet-telemetry.ts';

/**
 * This project's poller as a user deploys it: `startPollerFromConfig` over the example domain's handlers
 * (`CaseDeadlineCalculationRequested`), configured by the poller's variables — a pool of `concurrency`
 * connections (`prepare: false`, as behind RDS Proxy), `POLLER_CONCURRENCY` records in flight, batches of 10,
 * the default 30 s lease and its heartbeat at half. The adaptive limit is off so that both sides of a comparison
 * run at the same concurrency; long polls wait 1 s (the queue is full while measured, so the wait only shortens
 * the stop). Its logger does all its work (one line per record, as in production) into a discarding stream.
 */
export const pollerSide: ConsumerSide = {
  name: 'this poller',
  async start({ rig, queueUrl, consumer, concurrency, commitMode, onReceived, onDeleted }) {
    const config = loadPollerConfig({
      DATABASE_URL: rig.dbUrl,
      WORKER_CONSUMER: consumer,
      WORKER_QUEUE_URL: queueUrl,
      WORKER_COMMIT_MODE: commitMode,
      SQS_ENDPOINT: rig.sqsProxy.endpoint,
      AWS_REGION: rig.sqs.region,
      AWS_ACCESS_KEY_ID: 'local',
      AWS_SECRET_ACCESS_KEY: 'local',
      DB_POOL_SIZE: String(concurrency),
      POLLER_CONCURRENCY: String(concurrency),
      POLLER_BATCH_SIZE: '10',
      POLLER_ADAPTIVE_CONCURRENCY: 'off',
      POLLER_WAIT_SECONDS: '1',
    });
    const { logger } = quietTelemetry(consumer, () => {});
    const onEvent = (event: PollerEvent) => {
      if (event.type === 'received') onReceived(event.messageIds);
      else if (event.type === 'settled') onDeleted(event.deleted);
    };
    const running = await startPollerFromConfig({ handlers: exampleHandlers, config, logger, onEvent });
    return {
      async stop() {
        await running.poller.stop({ timeoutMs: 10_000 });
        await running.close('graceful');
      },
    };
  },
};
