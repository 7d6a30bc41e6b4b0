import { SQSClient } from '@aws-sdk/client-sqs';
import { sqsClientFor } from '../local/sqs-client-for.ts';
import type { OpsSettings } from './ops-settings.ts';

/** The part of the SQS client the ops commands use (a real `SQSClient`, or a recording fake in tests). */
export type SqsSender = Pick<SQSClient, 'send'>;

/**
 * An SQS client: the explicit endpoint when one is set (local emulator), otherwise AWS with the default
 * credential chain (environment, profile, SSO, instance role).
 */
export function createOpsSqs(settings: Pick<OpsSettings, 'sqsEndpoint' | 'region'>): SQSClient {
  if (settings.sqsEndpoint) return sqsClientFor(settings.sqsEndpoint, settings.region ?? 'us-east-1');
  return new SQSClient(settings.region ? { region: settings.region } : {});
}
