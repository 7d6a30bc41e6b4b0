import type * as ecrAssets from 'aws-cdk-lib/aws-ecr-assets';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import { MAX_WORKER_VERSION_LENGTH } from '../lambda/worker-version.ts';

/** Characters of an asset hash kept as the worker version: enough to tell deploys apart, short enough to read. */
export const CODE_VERSION_LENGTH = 12;

/**
 * The worker version of a function's code: the first {@link CODE_VERSION_LENGTH} characters of its code asset's hash
 * (the S3 key of the asset is `<hash>.zip`; the hash is of the bundle's output, so it changes exactly when the
 * deployed code does). Set as the function's `WORKER_VERSION` (lambda/worker-version.ts).
 *
 * @throws Error when the function's code is not an asset of known hash (inline code, or an S3 location of yours).
 * @internal
 */
export function functionCodeVersion(fn: lambda.Function): string {
  const code = (fn.node.defaultChild as lambda.CfnFunction).code as lambda.CfnFunction.CodeProperty;
  const key = code.s3Key;
  const hash = typeof key === 'string' ? /^(?:.*\/)?([0-9a-f]{16,})\.zip$/.exec(key)?.[1] : undefined;
  if (!hash) {
    throw new Error(
      `The code of ${fn.node.path} is not an asset with a hash (S3 key ${String(key)}), so WORKER_VERSION cannot be derived from it; set WORKER_VERSION in workerEnvironment`,
    );
  }
  return hash.slice(0, Math.min(CODE_VERSION_LENGTH, MAX_WORKER_VERSION_LENGTH));
}

/**
 * The worker version of the poller's image: the first {@link CODE_VERSION_LENGTH} characters of its asset hash, the
 * tag the image is pushed with. Set as the container's `WORKER_VERSION`.
 *
 * @internal
 */
export function imageCodeVersion(asset: ecrAssets.DockerImageAsset): string {
  return asset.assetHash.slice(0, CODE_VERSION_LENGTH);
}
