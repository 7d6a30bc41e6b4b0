import { GetQueueUrlCommand, type SQSClient } from '@aws-sdk/client-sqs';

const cache = new Map<string, Promise<string>>();

/**
 * Resolves the queue URL of an `eventSourceARN` (`arn:aws:sqs:region:account:name`) with GetQueueUrl, once
 * per ARN per execution environment. Asking SQS (rather than building `https://sqs.<region>.amazonaws.com/…`)
 * also works against local emulators and VPC endpoints.
 *
 * @internal
 */
export function queueUrlFromArn(sqs: SQSClient, arn: string): Promise<string> {
  let url = cache.get(arn);
  if (!url) {
    const [, , , , account, name] = arn.split(':');
    if (!account || !name) return Promise.reject(new Error(`Not an SQS queue ARN: ${arn}`));
    url = sqs
      .send(new GetQueueUrlCommand({ QueueName: name, QueueOwnerAWSAccountId: account }))
      .then(
        (response) =>
          response.QueueUrl ?? Promise.reject(new Error(`GetQueueUrl returned no URL for ${arn}`)),
      );
    url.catch(() => cache.delete(arn));
    cache.set(arn, url);
  }
  return url;
}
