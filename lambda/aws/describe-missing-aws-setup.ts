/**
 * The one line for an AWS SDK error that means the process has no region or no credentials ("Region is missing",
 * `CredentialsProviderError` "Could not load credentials from any providers"), naming the variables to set; undefined
 * for any other error. `what` names the call or the client (`SQS at https://sqs.eu-west-1.amazonaws.com`).
 *
 * @example
 * ```ts
 * const line = describeMissingAwsSetup(error, 'SQS'); // undefined: not a setup error
 * ```
 */
export function describeMissingAwsSetup(error: unknown, what = 'the AWS SDK'): string | undefined {
  const e = error as { name?: string; message?: string } | undefined;
  const message = e?.message ?? '';
  if (/region is missing/i.test(message)) {
    return `${what} has no AWS region: set AWS_REGION (e.g. AWS_REGION=eu-west-1), or give a profile with a region in AWS_PROFILE`;
  }
  if (e?.name === 'CredentialsProviderError' || /could not load credentials/i.test(message)) {
    return `${what} found no AWS credentials: set AWS_PROFILE, or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN for temporary ones)`;
  }
  return undefined;
}
