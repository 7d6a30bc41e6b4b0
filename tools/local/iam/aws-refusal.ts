import { randomUUID } from 'node:crypto';
import type { RefusalReason } from './evaluate-call.ts';

/** An HTTP response the proxy sends instead of forwarding the request. @internal */
export interface AwsErrorResponse {
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
}

/**
 * AWS's sentence for a refused call (the same in SQS, S3 and DynamoDB; S3 quotes the resource):
 * `User: <session ARN> is not authorized to perform: <action> on resource: <ARN> because no identity-based policy
 * allows the <action> action` (or `with an explicit deny in an identity-based | resource-based policy`).
 *
 * @internal
 */
export function accessDeniedMessage(
  service: string,
  refusal: {
    readonly sessionArn: string;
    readonly action: string;
    readonly resource: string;
    readonly reason: RefusalReason;
  },
): string {
  const resource = service === 's3' ? `"${refusal.resource}"` : refusal.resource;
  const because =
    refusal.reason === 'no-identity-allow'
      ? `because no identity-based policy allows the ${refusal.action} action`
      : `with an explicit deny in ${refusal.reason === 'identity-deny' ? 'an identity-based' : 'a resource-based'} policy`;
  return `User: ${refusal.sessionArn} is not authorized to perform: ${refusal.action} on resource: ${resource} ${because}`;
}

const escapeXml = (text: string) =>
  text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');

/** The JSON error of the AWS JSON protocols (SQS, DynamoDB), with SQS's query-compatible error code header. */
function jsonError(service: string, type: string, queryCode: string, message: string, status: number) {
  const requestId = randomUUID();
  const sqs = service === 'sqs';
  return {
    status,
    headers: {
      'content-type': 'application/x-amz-json-1.0',
      'x-amzn-requestid': requestId,
      // SQS speaks JSON for clients that used the query protocol before: this header carries the query error code,
      // which the SDK takes as the error's name.
      ...(sqs ? { 'x-amzn-query-error': `${queryCode};Sender` } : {}),
    },
    body: JSON.stringify({
      __type: `com.amazon.coral.service#${type}`,
      [sqs ? 'message' : 'Message']: message,
    }),
  };
}

/** S3's XML error (no body for HEAD, as S3 sends none). */
function s3Error(method: string, code: string, message: string, extra = ''): AwsErrorResponse {
  const requestId = randomUUID().replace(/-/g, '').slice(0, 16).toUpperCase();
  const body =
    method.toUpperCase() === 'HEAD'
      ? ''
      : `<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>${code}</Code><Message>${escapeXml(message)}</Message>${extra}<RequestId>${requestId}</RequestId><HostId>local</HostId></Error>`;
  return {
    status: 403,
    headers: { 'content-type': 'application/xml', 'x-amz-request-id': requestId },
    body,
  };
}

/**
 * The refusal AWS sends for a denied call, so the calling code's own error path runs: SQS (JSON protocol) HTTP
 * 400 `AccessDeniedException` with `x-amzn-query-error: AccessDenied;Sender` (the SDK names the error
 * `AccessDenied`); S3 HTTP 403 `<Error><Code>AccessDenied</Code>…`; DynamoDB HTTP 400 `AccessDeniedException`.
 *
 * @internal
 */
export function accessDeniedResponse(service: string, method: string, message: string): AwsErrorResponse {
  if (service === 's3') return s3Error(method, 'AccessDenied', message);
  return jsonError(service, 'AccessDeniedException', 'AccessDenied', message, 400);
}

/**
 * The refusal of a request signed with a key id no local component has (or not signed at all), as AWS refuses an
 * unknown key: SQS `InvalidClientTokenId`, S3 `InvalidAccessKeyId`, DynamoDB `UnrecognizedClientException`.
 *
 * @internal
 */
export function unknownKeyResponse(
  service: string,
  method: string,
  accessKeyId: string | undefined,
): AwsErrorResponse {
  if (service === 's3') {
    return s3Error(
      method,
      'InvalidAccessKeyId',
      'The AWS Access Key Id you provided does not exist in our records.',
      `<AWSAccessKeyId>${escapeXml(accessKeyId ?? '')}</AWSAccessKeyId>`,
    );
  }
  const message = 'The security token included in the request is invalid.';
  return jsonError(service, 'UnrecognizedClientException', 'InvalidClientTokenId', message, 400);
}

/**
 * The answer to a request the layer could not describe (a body that is not the protocol's): HTTP 400 with the
 * reason, never forwarded unchecked.
 *
 * @internal
 */
export function unreadableResponse(message: string): AwsErrorResponse {
  return { status: 400, headers: { 'content-type': 'text/plain; charset=utf-8' }, body: message };
}
