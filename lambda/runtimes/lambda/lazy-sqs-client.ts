import { localEndpointDefaults } from '../../aws/local-endpoint-defaults.ts';
import type { WorkerConfig } from '../../config.ts';
import type { SqsClientSource } from '../../sqs/sqs-client-source.ts';

/**
 * The Lambda worker's SQS client, made (once, by the engine) when a record first needs a backoff: the SDK's SQS code
 * is a chunk of its own, which most cold starts never load. Honours `SQS_ENDPOINT` (a local emulator).
 *
 * @internal
 */
export function lazySqsClient(config: Pick<WorkerConfig, 'sqsEndpoint'>): SqsClientSource {
  return async () => {
    const { SQSClient } = await import('../../sqs/sqs-sdk.ts');
    return new SQSClient(
      config.sqsEndpoint
        ? {
            ...localEndpointDefaults(config.sqsEndpoint),
            endpoint: config.sqsEndpoint,
            useQueueUrlAsEndpoint: false,
          }
        : {},
    );
  };
}
