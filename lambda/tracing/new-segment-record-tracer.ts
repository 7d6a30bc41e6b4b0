import { ConfigError } from '../errors.ts';
import type { RecordTracer } from './record-tracer.ts';
import { createSegmentRecordTracer } from './segment-record-tracer.ts';

/** The X-Ray SDK's default sampler (`middleware.sampler`, which its type declarations leave out). */
interface XRaySampler {
  shouldSample(request: { serviceName: string; serviceType: string }): boolean | string;
}

/** The origin of a segment sent from an ECS task (X-Ray's `AWS::ECS::Container`). */
const ECS_ORIGIN = 'AWS::ECS::Container';

/**
 * Loads the X-Ray SDK and makes the poller's record tracer of service `serviceName`: a segment per sampled record,
 * sent to the X-Ray daemon beside the poller (the task's sidecar, `AWS_XRAY_DAEMON_ADDRESS`; see
 * {@link createSegmentRecordTracer}). The SDK is imported here, with `import()`, as `newRecordTracer` imports
 * Powertools Tracer: a poller with tracing off never loads it. Segments carry the ECS plugin's origin and container
 * name; each record is sampled by the SDK's default sampler (the account's sampling rules, which it polls through
 * the daemon, falling back to one record a second and 5 % of the rest).
 *
 * Powertools Tracer is not used here: it traces Lambda invocations (a subsegment of the segment Lambda opens), and a
 * poller has none to hang records under.
 *
 * @internal
 */
export async function newSegmentRecordTracer(serviceName: string): Promise<RecordTracer> {
  // As newRecordTracer: a bundle the stack built without tracing leaves the SDK out (lib/worker-bundle-profile.ts).
  if (process.env.WORKER_BUNDLED_TRACING !== 'off') {
    const { default: xray } = await import('aws-xray-sdk-core');
    xray.config([xray.plugins.ECSPlugin]);
    const { sampler } = xray.middleware as unknown as { sampler: XRaySampler };
    return createSegmentRecordTracer(xray, serviceName, () =>
      Boolean(sampler.shouldSample({ serviceName, serviceType: ECS_ORIGIN })),
    );
  }
  throw new ConfigError(
    'POWERTOOLS_TRACE_ENABLED is "true", but this worker was bundled without tracing, without the X-Ray SDK. Deploy it with tracing: true on SqsDatabaseWorker (the stage setting tracing), or remove POWERTOOLS_TRACE_ENABLED from its environment.',
  );
}
