import type { QueueIdentity } from './worker-settings.ts';

/** Inputs of {@link checkQueueIdentity}. */
export interface QueueIdentityCheck {
  /** The identity this synth produces. */
  readonly synthesized: QueueIdentity;
  /** The identity recorded in the settings (`queueIdentity`); `undefined` when none is. */
  readonly recorded: QueueIdentity | undefined;
  /** Name of the stack, for the command that lists the deployed queues. */
  readonly stackName: string;
  /** `acknowledgeQueueReplacement`: this deploy may replace the queues. */
  readonly acknowledged: boolean;
  /**
   * How a setting is named in messages: `stages.prod.queueIdentity` for a cdk.json stage, or the bare prop name.
   */
  readonly settingName: (key: 'queueIdentity' | 'acknowledgeQueueReplacement') => string;
}

/** What {@link checkQueueIdentity} found: errors fail the synth, warnings are shown. */
export interface QueueIdentityFindings {
  readonly errors: readonly string[];
  readonly warnings: readonly string[];
}

/** `{"fifo":false,…}`: the form that can be pasted into cdk.json as it is. */
const asJson = (identity: QueueIdentity): string =>
  JSON.stringify({
    fifo: identity.fifo,
    queueLogicalId: identity.queueLogicalId,
    deadLetterQueueLogicalId: identity.deadLetterQueueLogicalId,
  });

/**
 * The guard against replacing the retained queues of a production worker by accident.
 *
 * CloudFormation replaces an `AWS::SQS::Queue` when its logical id, its `FifoQueue` or its `QueueName` changes
 * (every other property updates in place). The worker sets no queue name, so a queue's identity is its
 * type and its logical id. A replaced production queue is retained, not deleted: its messages (the DLQ's
 * above all) stay in a queue that nothing reads any more, and producers outside the stack keep sending to
 * its URL. Whether a deploy replaces a queue is only known against the deployed stack, which a synth
 * cannot see (it runs offline); so the deployed identity is recorded in the settings (`queueIdentity`, in
 * cdk.json for a stage) and every synth compares it with the identity it produces. A mismatch fails the
 * synth unless `acknowledgeQueueReplacement` is set; a missing record fails it too, with the value to record.
 * An acknowledgement that is no longer needed is an error as well, so it cannot stay behind and wave the
 * next replacement through unseen.
 *
 * @returns one error per mismatched field (or for a missing record, or a stale acknowledgement), each with the
 * value and the fix; a warning naming the new identity to record when a replacement is acknowledged.
 * @example
 * ```ts
 * const { errors } = checkQueueIdentity({
 *   synthesized,
 *   recorded: props.queueIdentity,
 *   acknowledged: false,
 *   stackName: 'SqsInboxWorker-prod',
 *   settingName: (key) => `stages.prod.${key}`,
 * });
 * ```
 */
export function checkQueueIdentity(check: QueueIdentityCheck): QueueIdentityFindings {
  const { synthesized, recorded, acknowledged, stackName, settingName } = check;
  const identity = settingName('queueIdentity');
  const acknowledge = settingName('acknowledgeQueueReplacement');
  if (recorded === undefined) {
    return {
      errors: [
        `${identity} is not set: a production worker retains its source queue and DLQ, and a deploy that would replace them must be acknowledged. Set ${identity} to ${asJson(synthesized)} (the identity this synth produces). If the stack is already deployed, first compare it with the deployed queues: \`aws cloudformation describe-stack-resources --stack-name ${stackName}\` lists the AWS::SQS::Queue logical ids, and a FIFO queue's URL ends in .fifo`,
      ],
      warnings: [],
    };
  }

  const changes: string[] = [];
  if (synthesized.fifo !== recorded.fifo) {
    changes.push(
      `fifo is ${synthesized.fifo} but ${identity}.fifo records ${recorded.fifo}: SQS cannot change a queue's type, so this deploy would replace the source queue and the DLQ. Set fifo back to ${recorded.fifo}`,
    );
  }
  const ids = [
    ['queueLogicalId', 'source queue', synthesized.queueLogicalId, recorded.queueLogicalId],
    [
      'deadLetterQueueLogicalId',
      'DLQ',
      synthesized.deadLetterQueueLogicalId,
      recorded.deadLetterQueueLogicalId,
    ],
  ] as const;
  for (const [key, what, now, before] of ids) {
    if (now !== before) {
      changes.push(
        `the ${what}'s logical id is "${now}" but ${identity}.${key} records "${before}": a renamed or moved construct replaces the ${what}. Restore the construct's id and path, or keep the old id with overrideLogicalId('${before}') on its CfnQueue`,
      );
    }
  }

  if (changes.length === 0) {
    return acknowledged
      ? {
          errors: [
            `${acknowledge} is true but this synth replaces no queue (it matches ${identity}); remove ${acknowledge} so the next replacing change is refused again`,
          ],
          warnings: [],
        }
      : { errors: [], warnings: [] };
  }
  if (acknowledged) {
    return {
      errors: [],
      warnings: [
        `${acknowledge} is set: this deploy replaces the source queue and the DLQ; the old ones are retained and must be deleted by hand once empty. After the deploy, set ${identity} to ${asJson(synthesized)} and remove ${acknowledge}`,
      ],
    };
  }
  const toReplace = `; or, to replace them on purpose: stop the producers, drain the DLQ (sqs-worker dlq peek, then dlq redrive) and let the worker empty the source queue, then set ${acknowledge}: true for that deploy`;
  return { errors: changes.map((change) => `${change}${toReplace}`), warnings: [] };
}
