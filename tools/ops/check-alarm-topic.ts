import { ListSubscriptionsByTopicCommand, type SNSClient } from '@aws-sdk/client-sns';
import { fail, pass, SMOKE_CHECKS, type SmokeCheck, skip } from './smoke-check.ts';

/** The part of `SNSClient` the smoke uses (ListSubscriptionsByTopic); tests pass a fake. */
export type SubscriptionReader = Pick<SNSClient, 'send'>;

/** Where the alarm topic check stands, decided by the caller from the stage and the environment. */
export type AlarmTopicTarget =
  | { readonly kind: 'local' }
  | { readonly kind: 'none-on-purpose'; readonly stage: string }
  | { readonly kind: 'aws'; readonly topicArn: string | undefined; readonly sns: SubscriptionReader };

/** SNS's SubscriptionArn of a subscription that is not (or no longer) confirmed. */
const UNCONFIRMED = new Set(['PendingConfirmation', 'Deleted']);

/**
 * "The alarm topic has a confirmed subscription": ListSubscriptionsByTopic (every page) and at least one
 * subscription whose SubscriptionArn is an ARN — SNS reports `PendingConfirmation` until the e-mail link is followed.
 * SKIP locally (no SNS) and for a stage that says `alarms: 'none'`.
 *
 * @internal
 */
export async function checkAlarmTopic(target: AlarmTopicTarget): Promise<SmokeCheck> {
  const name = SMOKE_CHECKS.alarmTopic;
  if (target.kind === 'local') return skip(name, 'local stack: no SNS (the alarm topic exists in AWS only)');
  if (target.kind === 'none-on-purpose') {
    return skip(name, `stage ${target.stage} sets alarms: 'none': nobody is subscribed, on purpose`);
  }
  if (!target.topicArn) {
    return fail(
      name,
      'no alarm topic ARN: the stack output AlarmTopicArn was not found; pass --alarm-topic-arn',
    );
  }
  const confirmed: string[] = [];
  let pending = 0;
  let token: string | undefined;
  try {
    do {
      const page = await target.sns.send(
        new ListSubscriptionsByTopicCommand({ TopicArn: target.topicArn, NextToken: token }),
      );
      for (const subscription of page.Subscriptions ?? []) {
        const arn = subscription.SubscriptionArn ?? '';
        if (arn.startsWith('arn:') && !UNCONFIRMED.has(arn)) confirmed.push(subscription.Protocol ?? '?');
        else if (arn === 'PendingConfirmation') pending += 1;
      }
      token = page.NextToken;
    } while (token);
  } catch (error) {
    return fail(
      name,
      `ListSubscriptionsByTopic on ${target.topicArn} failed: ${(error as Error).name}: ${(error as Error).message} (the operator needs sns:ListSubscriptionsByTopic)`,
    );
  }
  if (confirmed.length > 0) {
    const byProtocol = [...new Set(confirmed)].map(
      (protocol) => `${protocol} ×${confirmed.filter((p) => p === protocol).length}`,
    );
    return pass(
      name,
      `${confirmed.length} confirmed (${byProtocol.join(', ')})${pending ? `, ${pending} pending` : ''}`,
    );
  }
  return fail(
    name,
    pending > 0
      ? `no confirmed subscription: ${pending} pending confirmation (follow the link in the "AWS Notification - Subscription Confirmation" e-mail)`
      : `no subscription on ${target.topicArn}: nobody reads the alarms; set alarmEmail or alarmTopicArn for the stage and deploy`,
  );
}
