import {
  GetEventSourceMappingCommand,
  ListTagsCommand,
  TagResourceCommand,
  UntagResourceCommand,
  UpdateEventSourceMappingCommand,
} from '@aws-sdk/client-lambda';
import type { EventSourceMappingClient } from '../../lambda/breaker/mapping-control.ts';
import type { EventSourceMapping } from './event-source-mapping.ts';

/** One call the fake received: the command's name and input. */
export interface RecordedCall {
  readonly command: string;
  readonly input: Record<string, unknown>;
  readonly at: number;
}

/** The Lambda control plane's part the breaker uses, over a local event source mapping, recording every call. */
export interface LocalLambdaControl {
  /** Pass this where a `LambdaClient` is expected. */
  readonly client: EventSourceMappingClient;
  readonly calls: RecordedCall[];
  readonly uuid: string;
  readonly arn: string;
  readonly tags: Record<string, string>;
  /** The next call of `command` rejects with `error` (once). */
  failNext(command: string, error: Error): void;
}

/**
 * Lambda's control plane for a local event source mapping (it has no local emulator): the breaker's client in the
 * local runtime, and the ONE faked collaborator of the breaker tests. Each command is recorded and applied to the local event source mapping (`Enabled` → `setEnabled`,
 * `ScalingConfig.MaximumConcurrency` → `setMaxConcurrency`); tags live in memory. Any other command, an
 * unknown UUID or ARN, or a provisioned scaling on a local mapping throws, as the service would refuse it.
 */
export function localLambdaControl(
  esm: EventSourceMapping,
  options: { uuid?: string; region?: string } = {},
): LocalLambdaControl {
  const uuid = options.uuid ?? '6f1c7a9e-0000-4000-8000-00000000e5a1';
  const arn = `arn:aws:lambda:${options.region ?? 'us-east-1'}:000000000000:event-source-mapping:${uuid}`;
  const calls: RecordedCall[] = [];
  const tags: Record<string, string> = {};
  const failures = new Map<string, Error>();
  const mapping = () => ({
    UUID: uuid,
    EventSourceMappingArn: arn,
    EventSourceArn: esm.eventSourceArn,
    State: esm.enabled ? 'Enabled' : 'Disabled',
    LastModified: new Date(esm.lastModified),
    ScalingConfig: { MaximumConcurrency: esm.maxConcurrency },
  });
  const requireUuid = (given: unknown) => {
    if (given !== uuid)
      throw new Error(`ResourceNotFoundException: no event source mapping ${String(given)}`);
  };
  const requireArn = (given: unknown) => {
    if (given !== arn) throw new Error(`ResourceNotFoundException: no resource ${String(given)}`);
  };
  const send = async (command: unknown): Promise<unknown> => {
    const name = (command as { constructor: { name: string } }).constructor.name;
    const input = (command as { input: Record<string, unknown> }).input;
    calls.push({ command: name, input: structuredClone(input), at: Date.now() });
    const failure = failures.get(name);
    if (failure) {
      failures.delete(name);
      throw failure;
    }
    if (command instanceof GetEventSourceMappingCommand) {
      requireUuid(command.input.UUID);
      return mapping();
    }
    if (command instanceof UpdateEventSourceMappingCommand) {
      requireUuid(command.input.UUID);
      if (command.input.ProvisionedPollerConfig) {
        throw new Error('InvalidParameterValueException: the local mapping has no provisioned pollers');
      }
      const concurrency = command.input.ScalingConfig?.MaximumConcurrency;
      if (concurrency !== undefined) esm.setMaxConcurrency(concurrency);
      if (command.input.Enabled !== undefined) esm.setEnabled(command.input.Enabled);
      return mapping();
    }
    if (command instanceof ListTagsCommand) {
      requireArn(command.input.Resource);
      return { Tags: { ...tags } };
    }
    if (command instanceof TagResourceCommand) {
      requireArn(command.input.Resource);
      Object.assign(tags, command.input.Tags);
      return {};
    }
    if (command instanceof UntagResourceCommand) {
      requireArn(command.input.Resource);
      for (const key of command.input.TagKeys ?? []) delete tags[key];
      return {};
    }
    throw new Error(`The recorded Lambda client does not implement ${name}`);
  };
  return {
    client: { send } as unknown as EventSourceMappingClient,
    calls,
    uuid,
    arn,
    tags,
    failNext(command, error) {
      failures.set(command, error);
    },
  };
}
