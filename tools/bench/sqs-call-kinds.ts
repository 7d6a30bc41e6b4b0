import type { SqsCalls } from './sqs-delay-proxy.ts';

/** SQS calls grouped by what they do, each the single and the batch form together. */
export interface SqsCallKinds {
  readonly receive: number;
  /** DeleteMessage and DeleteMessageBatch. */
  readonly delete: number;
  /** ChangeMessageVisibility and ChangeMessageVisibilityBatch: heartbeats, backoffs, releases. */
  readonly visibility: number;
  /** Every other action (GetQueueAttributes at a start, …). */
  readonly other: number;
  readonly total: number;
}

/** Groups `calls` by kind and divides each by `per` (messages, for calls per message). */
export function sqsCallKinds(calls: SqsCalls, per = 1): SqsCallKinds {
  let receive = 0;
  let deletes = 0;
  let visibility = 0;
  let other = 0;
  for (const [action, count] of Object.entries(calls)) {
    if (action === 'ReceiveMessage') receive += count;
    else if (action === 'DeleteMessage' || action === 'DeleteMessageBatch') deletes += count;
    else if (action === 'ChangeMessageVisibility' || action === 'ChangeMessageVisibilityBatch')
      visibility += count;
    else other += count;
  }
  const total = receive + deletes + visibility + other;
  return {
    receive: receive / per,
    delete: deletes / per,
    visibility: visibility / per,
    other: other / per,
    total: total / per,
  };
}
