import { SQSClient } from '@aws-sdk/client-sqs';
import { type LocalComponent, localCredentials } from './iam/local-identities.ts';

/**
 * Creates an AWS SDK SQS client for an explicit endpoint (the local emulator, LocalStack, …).
 * `useQueueUrlAsEndpoint: false` keeps requests on `endpoint` even when a queue URL names another host; a TCP
 * connection that does not open within 5 s fails the request. It signs as `component` (the local IAM layer
 * evaluates its calls against that component's role; `admin`, the operator, is allowed everything).
 */
export function sqsClientFor(
  endpoint: string,
  region = 'us-east-1',
  component: LocalComponent = 'admin',
): SQSClient {
  return new SQSClient({
    endpoint,
    region,
    useQueueUrlAsEndpoint: false,
    credentials: localCredentials(component),
    // An endpoint where nothing answers the TCP handshake fails its request after 5 s instead of never. (No
    // request timeout: long polls wait up to 20 s for an answer.)
    requestHandler: { connectionTimeout: 5000 },
  });
}
