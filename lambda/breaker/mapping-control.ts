import {
  GetEventSourceMappingCommand,
  type LambdaClient,
  ListTagsCommand,
  TagResourceCommand,
  UntagResourceCommand,
  UpdateEventSourceMappingCommand,
  type UpdateEventSourceMappingCommandInput,
} from '@aws-sdk/client-lambda';

/**
 * The tag on the event source mapping that holds the breaker open (`sqs-worker breaker open`). Kept on the
 * mapping, not in the database: an operator must be able to hold it during a database outage, and the breaker
 * reads it with the same call that tells it whether the mapping is enabled.
 */
export const BREAKER_HOLD_TAG = 'sqs-inbox-worker:breaker-hold';

/**
 * The tag on the event source mapping that pins its `MaximumConcurrency` (`sqs-worker concurrency pin <n>`, value
 * `n`): the breaker's control loop sets the mapping to it and never moves it while the tag is there. Beside the
 * hold, for the same reason: an operator must be able to set it while the database is struggling.
 */
export const CONCURRENCY_PIN_TAG = 'sqs-inbox-worker:concurrency-pin';

/** How the mapping scales when it runs normally; the breaker restores this after a half-open. */
export type MappingScaling =
  | { readonly mode: 'maximum-concurrency'; readonly maxConcurrency: number }
  | { readonly mode: 'provisioned'; readonly minimumPollers: number; readonly maximumPollers: number };

/**
 * The part of `LambdaClient` the breaker uses (`send` of GetEventSourceMapping, UpdateEventSourceMapping,
 * ListTags and, for the ops commands, TagResource/UntagResource). Tests pass a recorded fake.
 */
export type EventSourceMappingClient = Pick<LambdaClient, 'send'>;

/** What {@link readMapping} returns. */
export interface MappingSnapshot {
  readonly uuid: string;
  readonly arn: string;
  /** `State` is Enabled, Enabling or Updating (not Disabled nor Disabling). */
  readonly enabled: boolean;
  /** Lambda's `State` as returned. */
  readonly state: string;
  readonly lastModified: number;
  readonly maxConcurrency: number | undefined;
  readonly pollers: { readonly minimum?: number; readonly maximum?: number } | undefined;
  /** The hold tag's value, when an operator holds the breaker open. */
  readonly hold: string | undefined;
  /** The pin tag's value (as tagged, unparsed), when an operator pinned the `MaximumConcurrency`. */
  readonly pin: string | undefined;
}

/** Reads the mapping and its hold tag (GetEventSourceMapping, then ListTags on its ARN). */
export async function readMapping(client: EventSourceMappingClient, uuid: string): Promise<MappingSnapshot> {
  const mapping = await client.send(new GetEventSourceMappingCommand({ UUID: uuid }));
  const arn = mapping.EventSourceMappingArn;
  if (!arn) {
    throw new Error(`Event source mapping ${uuid} has no EventSourceMappingArn; check BREAKER_MAPPING_UUID`);
  }
  const { Tags = {} } = await client.send(new ListTagsCommand({ Resource: arn }));
  const state = mapping.State ?? 'Enabled';
  return {
    uuid,
    arn,
    enabled: state !== 'Disabled' && state !== 'Disabling',
    state,
    lastModified: mapping.LastModified?.getTime() ?? Date.now(),
    maxConcurrency: mapping.ScalingConfig?.MaximumConcurrency,
    pollers: mapping.ProvisionedPollerConfig
      ? {
          minimum: mapping.ProvisionedPollerConfig.MinimumPollers,
          maximum: mapping.ProvisionedPollerConfig.MaximumPollers,
        }
      : undefined,
    hold: Tags[BREAKER_HOLD_TAG],
    pin: Tags[CONCURRENCY_PIN_TAG],
  };
}

/** The scaling of a half-open mapping: the event source minimum (2), in the mode the mapping runs in. */
export function halfOpenScaling(scaling: MappingScaling, halfOpenConcurrency: number): MappingScaling {
  return scaling.mode === 'provisioned'
    ? { mode: 'provisioned', minimumPollers: 2, maximumPollers: 2 }
    : { mode: 'maximum-concurrency', maxConcurrency: Math.min(halfOpenConcurrency, scaling.maxConcurrency) };
}

/** Disables the mapping (`Enabled=false`): Lambda stops polling; invocations in flight finish. */
export async function disableMapping(client: EventSourceMappingClient, uuid: string): Promise<void> {
  await client.send(new UpdateEventSourceMappingCommand({ UUID: uuid, Enabled: false }));
}

/** Enables the mapping with `scaling` (`Enabled=true` plus `ScalingConfig` or `ProvisionedPollerConfig`). */
export async function enableMapping(
  client: EventSourceMappingClient,
  uuid: string,
  scaling: MappingScaling,
): Promise<void> {
  const input: UpdateEventSourceMappingCommandInput = {
    UUID: uuid,
    Enabled: true,
    ...(scaling.mode === 'provisioned'
      ? {
          ProvisionedPollerConfig: {
            MinimumPollers: scaling.minimumPollers,
            MaximumPollers: scaling.maximumPollers,
          },
        }
      : { ScalingConfig: { MaximumConcurrency: scaling.maxConcurrency } }),
  };
  await client.send(new UpdateEventSourceMappingCommand(input));
}

/**
 * Sets the mapping's `MaximumConcurrency` alone (`ScalingConfig`, no `Enabled`): a disabled mapping stays disabled.
 * The control loop's and `sqs-worker concurrency pin`'s one write.
 */
export async function setMaxConcurrency(
  client: EventSourceMappingClient,
  uuid: string,
  maxConcurrency: number,
): Promise<void> {
  await client.send(
    new UpdateEventSourceMappingCommand({
      UUID: uuid,
      ScalingConfig: { MaximumConcurrency: maxConcurrency },
    }),
  );
}

/** Tags the mapping with the pin (`sqs-worker concurrency pin <n>`). */
export async function pinMapping(
  client: EventSourceMappingClient,
  arn: string,
  value: number,
): Promise<void> {
  await client.send(
    new TagResourceCommand({ Resource: arn, Tags: { [CONCURRENCY_PIN_TAG]: String(value) } }),
  );
}

/** Removes the pin tag (`sqs-worker concurrency unpin`): the control loop moves the mapping again. */
export async function unpinMapping(client: EventSourceMappingClient, arn: string): Promise<void> {
  await client.send(new UntagResourceCommand({ Resource: arn, TagKeys: [CONCURRENCY_PIN_TAG] }));
}

/** Tags the mapping with the hold (`sqs-worker breaker open`). */
export async function holdMapping(
  client: EventSourceMappingClient,
  arn: string,
  value: string,
): Promise<void> {
  await client.send(new TagResourceCommand({ Resource: arn, Tags: { [BREAKER_HOLD_TAG]: value } }));
}

/** Removes the hold tag (`sqs-worker breaker close`). */
export async function releaseMapping(client: EventSourceMappingClient, arn: string): Promise<void> {
  await client.send(new UntagResourceCommand({ Resource: arn, TagKeys: [BREAKER_HOLD_TAG] }));
}
