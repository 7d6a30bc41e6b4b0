import { copyFileSync, mkdirSync, readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import { AssetHashType, DockerImage, type Duration, RemovalPolicy, Validations } from 'aws-cdk-lib';
import type * as ec2 from 'aws-cdk-lib/aws-ec2';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as logs from 'aws-cdk-lib/aws-logs';
import type { Construct } from 'constructs';
import { type BuildOptions, buildSync } from 'esbuild';
import { PROJECT_ROOT } from './project-root.ts';
import { SOURCE_CONDITION } from './source-condition.ts';
import {
  describeWorkerBundleProfile,
  type WorkerBundleProfile,
  workerBundleDefines,
} from './worker-bundle-profile.ts';

export { PROJECT_ROOT };

/**
 * The Lambda runtime of every function of the stack: the current Node.js LTS runtime.
 *
 * @internal
 */
export const NODE_RUNTIME = lambda.Runtime.NODEJS_24_X;

/**
 * esbuild target matching {@link NODE_RUNTIME}.
 *
 * @internal
 */
export const ESBUILD_TARGET = 'node24';

/**
 * esbuild settings of every function (the bench bundles with them too): ESM (top-level await works), minified,
 * linked source maps (the functions set `NODE_OPTIONS=--enable-source-maps`), everything bundled — the AWS SDK
 * at the version package-lock.json pins instead of the runtime's — and **code splitting**: `index.mjs` holds
 * what loading the handler needs, and every module a handler loads with `import()` (the worker's SQS client,
 * needed on the first backoff only, and the RDS IAM signer, needed on the first connection) goes into
 * `chunks/`, so a cold start compiles only the code it runs. `bowser` (browser-only SDK code) is replaced by
 * a stub (lib/bowser-stub.ts), and so are the credential providers a Lambda function never reaches (SSO, config
 * files, `credential_process`, web identity: lib/lambda-credential-stub.ts; the provider collection the RDS signer
 * imports: lib/credential-providers-stub.ts) — esbuild ships every `import()` target, used or not. For the same
 * reason a worker is bundled with its `profile` (lib/worker-bundle-profile.ts): its tracing setting, so a worker
 * without tracing ships no tracer (its store is its entry's). ESM bundles of CommonJS dependencies
 * need `require`, hence the banner. Class and function names survive minification (`keepNames`): errors are told
 * apart by `error.name`.
 *
 * @internal
 */
export function bundleOptions(entry: string, outdir: string, profile?: WorkerBundleProfile): BuildOptions {
  return {
    entryPoints: { index: entry },
    outdir,
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'node',
    target: ESBUILD_TARGET,
    outExtension: { '.js': '.mjs' },
    chunkNames: 'chunks/[name]-[hash]',
    minify: true,
    // Minifying renames classes, and error classes name themselves after their constructor: postgres.js's
    // `PostgresError` would become `Oe`, and every check of `error.name === 'PostgresError'` (SQLSTATE
    // classification, database error messages) would fail in the bundle only.
    keepNames: true,
    sourcemap: 'linked',
    sourcesContent: false,
    mainFields: ['module', 'main'],
    // The package's own entries resolve to their sources (lib/source-condition.ts); `module` is esbuild's default
    // condition, which a list of custom ones replaces.
    conditions: [SOURCE_CONDITION, 'module'],
    alias: {
      bowser: join(PROJECT_ROOT, 'lib/bowser-stub.ts'),
      '@aws-sdk/credential-providers': join(PROJECT_ROOT, 'lib/credential-providers-stub.ts'),
      ...Object.fromEntries(
        ['sso', 'ini', 'process', 'web-identity'].map((provider) => [
          `@aws-sdk/credential-provider-${provider}`,
          join(PROJECT_ROOT, 'lib/lambda-credential-stub.ts'),
        ]),
      ),
    },
    ...(profile ? { define: workerBundleDefines(profile) } : {}),
    banner: {
      js: "import { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);",
    },
    logLevel: 'warning',
  };
}

/**
 * Files copied next to a function's code: every file of `from` whose name ends with `suffix`, into `into`.
 *
 * @internal
 */
export interface BundledFiles {
  /** Absolute path of the source folder. */
  readonly from: string;
  /** Folder in the bundle, relative to its root. */
  readonly into: string;
  /** Name suffix of the files to copy, e.g. `.sql`. */
  readonly suffix: string;
}

/**
 * Options of {@link bundledFunction}.
 *
 * @internal
 */
export interface BundledFunctionOptions {
  /** Absolute path of the entry file (exports `handler`). */
  readonly entry: string;
  readonly description: string;
  /** The VPC of the function; none for a function outside a VPC (the DynamoDB store's worker). */
  readonly vpc?: ec2.IVpc;
  readonly vpcSubnets?: ec2.SubnetSelection;
  readonly timeout: Duration;
  readonly memorySize?: number;
  readonly environment?: Record<string, string>;
  readonly reservedConcurrentExecutions?: number;
  /** Files that travel with the code (the migration function's `migrations/`). */
  readonly files?: readonly BundledFiles[];
  /** X-Ray tracing mode; CDK adds the X-Ray write permissions to the role for `ACTIVE`. @default none (PassThrough) */
  readonly tracing?: lambda.Tracing;
  /** The worker's store (its entry's) and tracing setting, which decide what its bundle leaves out. @default none: nothing left out */
  readonly profile?: WorkerBundleProfile;
}

/**
 * A Lambda function bundled by the local esbuild (no Docker) with {@link bundleOptions}: arm64,
 * {@link NODE_RUNTIME}, in the VPC when one is given, with its own log group (one month) so retention is explicit and the group is
 * removed with the stack. (`NodejsFunction` always writes one `--outfile`, which rules out code splitting.)
 *
 * @internal
 */
export function bundledFunction(
  scope: Construct,
  id: string,
  options: BundledFunctionOptions,
): lambda.Function {
  const logGroup = new logs.LogGroup(scope, `${id}Logs`, {
    retention: logs.RetentionDays.ONE_MONTH,
    removalPolicy: RemovalPolicy.DESTROY,
  });
  const code = lambda.Code.fromAsset(PROJECT_ROOT, {
    assetHashType: AssetHashType.OUTPUT,
    bundling: {
      // Never pulled: local bundling below always succeeds or throws (esbuild is a dependency of the project).
      image: DockerImage.fromRegistry('local-esbuild-only'),
      // Never run either, but it names what is built: CDK caches staged assets by these options (a function such
      // as `tryBundle` does not count), so without it every function of a stack would get the first bundle.
      command: [
        'esbuild',
        relative(PROJECT_ROOT, options.entry),
        ...(options.profile ? [`profile ${describeWorkerBundleProfile(options.profile)}`] : []),
        ...(options.files ?? []).map(
          (files) => `copy ${relative(PROJECT_ROOT, files.from)}/*${files.suffix}`,
        ),
      ],
      local: {
        tryBundle(outputDir: string): boolean {
          buildSync(bundleOptions(options.entry, outputDir, options.profile));
          for (const files of options.files ?? []) {
            mkdirSync(join(outputDir, files.into), { recursive: true });
            for (const name of readdirSync(files.from).filter((file) => file.endsWith(files.suffix))) {
              copyFileSync(join(files.from, name), join(outputDir, files.into, name));
            }
          }
          return true;
        },
      },
    },
  });
  const fn = new lambda.Function(scope, id, {
    code,
    handler: 'index.handler',
    description: options.description,
    runtime: NODE_RUNTIME,
    architecture: lambda.Architecture.ARM_64,
    memorySize: options.memorySize ?? 256,
    timeout: options.timeout,
    vpc: options.vpc,
    vpcSubnets: options.vpcSubnets,
    // Stack traces point at the TypeScript sources (the bundle ships its source maps).
    environment: { NODE_OPTIONS: '--enable-source-maps', ...options.environment },
    reservedConcurrentExecutions: options.reservedConcurrentExecutions,
    logGroup,
    ...(options.tracing ? { tracing: options.tracing } : {}),
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
