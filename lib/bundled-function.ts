import { fileURLToPath } from 'node:url';
import { Duration, RemovalPolicy, Validations } from 'aws-cdk-lib';
import type * as ec2 from 'aws-cdk-lib/aws-ec2';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as nodejs from 'aws-cdk-lib/aws-lambda-nodejs';
import * as logs from 'aws-cdk-lib/aws-logs';
import type { Construct } from 'constructs';

/** Root of the project (the folder holding package.json), resolved from this file. */
export const PROJECT_ROOT = fileURLToPath(new URL('..', import.meta.url));

/** The Lambda runtime of every function of the stack: the current Node.js LTS runtime. */
export const NODE_RUNTIME = lambda.Runtime.NODEJS_24_X;

/** esbuild target matching {@link NODE_RUNTIME}. */
export const ESBUILD_TARGET = 'node24';

/**
 * esbuild settings shared by every function (also used by the bundling test):
 * ESM output (top-level await works), minified, with source maps (`NODE_OPTIONS=--enable-source-maps` is set by
 * `NodejsFunction`), and the AWS SDK bundled at the version package-lock.json pins instead of the runtime's.
 * ESM bundles of CommonJS dependencies need `require`, hence the banner.
 */
export const BUNDLING_OPTIONS = {
  format: nodejs.OutputFormat.ESM,
  minify: true,
  sourceMap: true,
  sourcesContent: false,
  target: ESBUILD_TARGET,
  mainFields: ['module', 'main'],
  externalModules: [] as string[],
  bundleAwsSDK: true,
  forceDockerBundling: false,
  banner: "import { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);",
} as const satisfies nodejs.BundlingOptions;

/** Options of {@link bundledFunction}. */
export interface BundledFunctionOptions {
  /** Absolute path of the entry file (exports `handler`). */
  readonly entry: string;
  readonly description: string;
  readonly vpc: ec2.IVpc;
  readonly vpcSubnets: ec2.SubnetSelection;
  readonly timeout: Duration;
  readonly memorySize?: number;
  readonly environment?: Record<string, string>;
  readonly reservedConcurrentExecutions?: number;
  /** esbuild command hooks (the migration function copies `migrations/` next to its code). */
  readonly commandHooks?: nodejs.ICommandHooks;
}

/**
 * A `NodejsFunction` bundled by the local esbuild (no Docker): arm64, {@link NODE_RUNTIME}, in the VPC, with
 * its own log group (one month) so retention is explicit and the group is removed with the stack.
 */
export function bundledFunction(
  scope: Construct,
  id: string,
  options: BundledFunctionOptions,
): nodejs.NodejsFunction {
  const logGroup = new logs.LogGroup(scope, `${id}Logs`, {
    retention: logs.RetentionDays.ONE_MONTH,
    removalPolicy: RemovalPolicy.DESTROY,
  });
  const fn = new nodejs.NodejsFunction(scope, id, {
    entry: options.entry,
    handler: 'handler',
    description: options.description,
    runtime: NODE_RUNTIME,
    architecture: lambda.Architecture.ARM_64,
    memorySize: options.memorySize ?? 256,
    timeout: options.timeout ?? Duration.seconds(30),
    vpc: options.vpc,
    vpcSubnets: options.vpcSubnets,
    // Stack traces point at the TypeScript sources (the bundle ships index.mjs.map).
    environment: { NODE_OPTIONS: '--enable-source-maps', ...options.environment },
    reservedConcurrentExecutions: options.reservedConcurrentExecutions,
    logGroup,
    projectRoot: PROJECT_ROOT,
    depsLockFilePath: `${PROJECT_ROOT}package-lock.json`,
    bundling: { ...BUNDLING_OPTIONS, externalModules: [], commandHooks: options.commandHooks },
  });
  if (fn.role) {
    const reason =
      'AWS managed Lambda execution policy: CloudWatch Logs writes and VPC network interfaces, the documented minimum for a function in a VPC; everything else is granted per resource.';
    Validations.of(fn.role).acknowledge(
      {
        id: 'AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole]',
        reason,
      },
      {
        id: 'AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaVPCAccessExecutionRole]',
        reason,
      },
    );
  }
  return fn;
}
