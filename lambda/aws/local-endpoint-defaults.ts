import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';

/** The region a client of a local endpoint signs for when none is set. */
export const LOCAL_ENDPOINT_REGION = 'us-east-1';

/**
 * The fake key a client of a local endpoint signs with when no credentials are set: emulators (fauxqs, DynamoDB Local,
 * LocalStack) check the signature's form, not the key.
 */
export const LOCAL_ENDPOINT_CREDENTIALS = { accessKeyId: 'local', secretAccessKey: 'local' } as const;

/** Variables that give the AWS SDK's default chain credentials (any one set: the user chose them). */
const CREDENTIAL_VARIABLES = [
  'AWS_ACCESS_KEY_ID',
  'AWS_PROFILE',
  'AWS_WEB_IDENTITY_TOKEN_FILE',
  'AWS_CONTAINER_CREDENTIALS_FULL_URI',
  'AWS_CONTAINER_CREDENTIALS_RELATIVE_URI',
] as const;

/**
 * True for an endpoint of an emulator, never for AWS: a loopback or `localhost` host (`http://127.0.0.1:4566`,
 * `http://localhost:8000`, `http://[::1]:9324`), or a plain-http endpoint whose host is not AWS's (an emulator in a
 * container, `http://localstack:4566`; AWS's endpoints are https under amazonaws.com or api.aws).
 */
export function isLocalEndpoint(endpoint: string | undefined): boolean {
  if (!endpoint || !URL.canParse(endpoint)) return false;
  const url = new URL(endpoint);
  const host = url.hostname.replace(/^\[|\]$/g, '').toLowerCase();
  if (host === 'localhost' || host.endsWith('.localhost') || host === '::1' || /^127\./.test(host))
    return true;
  return url.protocol === 'http:' && !/(^|\.)(amazonaws\.com(\.cn)?|api\.aws)$/.test(host);
}

/**
 * What an AWS SDK client of `endpoint` needs besides its endpoint, the way a user of the SDK expects a local emulator
 * to work without an AWS account: for a local endpoint ({@link isLocalEndpoint}) the region `us-east-1` when
 * `AWS_REGION` (or `AWS_DEFAULT_REGION`) is unset, and a fake key when no credentials are set (none of the SDK's
 * credential variables, no shared credentials file). Nothing for AWS's endpoints, or when the user set them: their
 * own region and credentials are never overridden.
 *
 * @example
 * ```ts
 * const sqs = new SQSClient({ ...localEndpointDefaults(endpoint), endpoint, useQueueUrlAsEndpoint: false });
 * ```
 */
export function localEndpointDefaults(
  endpoint: string | undefined,
  env: Record<string, string | undefined> = process.env,
): { region?: string; credentials?: { accessKeyId: string; secretAccessKey: string } } {
  if (!isLocalEndpoint(endpoint)) return {};
  const regionSet = !!(env.AWS_REGION || env.AWS_DEFAULT_REGION);
  const credentialsSet =
    CREDENTIAL_VARIABLES.some((name) => !!env[name]) ||
    existsSync(env.AWS_SHARED_CREDENTIALS_FILE || join(homedir(), '.aws', 'credentials'));
  return {
    ...(regionSet ? {} : { region: LOCAL_ENDPOINT_REGION }),
    ...(credentialsSet ? {} : { credentials: { ...LOCAL_ENDPOINT_CREDENTIALS } }),
  };
}
