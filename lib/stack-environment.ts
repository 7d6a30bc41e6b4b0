import type { Environment } from 'aws-cdk-lib';

/**
 * The environment (account and region) of the app's stack: `-c account=… -c region=…` first, then what the CDK CLI
 * exports from your credentials and profile (`CDK_DEFAULT_ACCOUNT`, `CDK_DEFAULT_REGION`), the convention every
 * CDK app follows. With neither, the stack is environment-agnostic (`undefined`), so `cdk synth` needs no AWS
 * credentials; an environment-specific stack looks up the region's availability zones once and caches them in
 * `cdk.context.json` (docs/deploy.md).
 *
 * @example
 * ```ts
 * new SqsInboxWorkerStack(app, 'SqsInboxWorker-dev', { env: stackEnvironment(app.node.tryGetContext('account'), app.node.tryGetContext('region')) });
 * ```
 */
export function stackEnvironment(
  contextAccount: string | undefined,
  contextRegion: string | undefined,
  env: Record<string, string | undefined> = process.env,
): Environment | undefined {
  const account = contextAccount || env.CDK_DEFAULT_ACCOUNT || undefined;
  const region = contextRegion || env.CDK_DEFAULT_REGION || undefined;
  return account || region ? { account, region } : undefined;
}
