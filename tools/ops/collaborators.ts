import { SQSClient } from '@aws-sdk/client-sqs';
import postgres from 'postgres';
import { connectOptions } from '../../lambda/postgres/connect-options.ts';
import { sqsClientFor } from '../local/sqs-client-for.ts';
import type { OpsSettings } from './ops-settings.ts';

/** The part of the SQS client the ops commands use (a real `SQSClient`, or a recording fake in tests). */
export type SqsSender = Pick<SQSClient, 'send'>;

/**
 * A small postgres.js client for an operator's session: two connections, no prepared statements (RDS Proxy
 * compatible), named `sqs-worker-ops` in `pg_stat_activity`. A connection that does not open within 10 s, or
 * 8 failed attempts in a row, fail the command with an error naming `setting` and host:port.
 */
export function createOpsSql(databaseUrl: string, setting = 'DATABASE_URL'): postgres.Sql {
  return postgres(databaseUrl, {
    ...connectOptions({ setting, connectTimeoutSeconds: 10 }),
    max: 2,
    prepare: false,
    idle_timeout: 5,
    onnotice: () => {},
    connection: { application_name: 'sqs-worker-ops' },
  });
}

/**
 * An SQS client: the explicit endpoint when one is set (local emulator), otherwise AWS with the default
 * credential chain (environment, profile, SSO, instance role).
 */
export function createOpsSqs(settings: Pick<OpsSettings, 'sqsEndpoint' | 'region'>): SQSClient {
  if (settings.sqsEndpoint) return sqsClientFor(settings.sqsEndpoint, settings.region ?? 'us-east-1');
  return new SQSClient(settings.region ? { region: settings.region } : {});
}
