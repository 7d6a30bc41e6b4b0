import {
  GetEventSourceMappingCommand,
  GetFunctionConfigurationCommand,
  type LambdaClient,
} from '@aws-sdk/client-lambda';
import { workerVersion } from '../../lambda/worker-version.ts';
import { OperationError } from './errors.ts';

/** The part of `LambdaClient` the deployed version is read with (GetFunctionConfiguration, GetEventSourceMapping). */
export type FunctionReader = Pick<LambdaClient, 'send'>;

/** Where `queue status` reads the worker's version from. */
export type DeployedVersionSource =
  /** The worker function, by name or ARN, or by the event source mapping that invokes it. */
  | {
      readonly kind: 'lambda';
      readonly lambda: FunctionReader;
      readonly functionName?: string | undefined;
      readonly mappingUuid?: string | undefined;
    }
  /** The local stack: the version `npm start` printed (`SQS_WORKER_LOCAL_VERSION`). */
  | { readonly kind: 'local'; readonly version: string | undefined };

/** The version of the deployed worker code, as every log line of it names it (`workerVersion`). */
export interface DeployedVersion {
  readonly version: string;
  /** What it was read from: the function's name, or `local stack`. */
  readonly from: string;
  /** When the function's code or configuration last changed (Lambda's LastModified). */
  readonly lastModified?: string;
}

/**
 * The worker version of the deployed worker: the function's `WORKER_VERSION` (the construct sets its code asset's
 * hash), read by GetFunctionConfiguration — of `functionName`, else of the function the mapping `mappingUuid` invokes
 * (GetEventSourceMapping) — and resolved as the function itself resolves it (`workerVersion`: without the variable,
 * `<function>:<version>`). Locally, the version the local stack printed. Undefined when nothing names the function.
 *
 * @throws OperationError naming the function and the permission when Lambda refuses the read.
 */
export async function readDeployedVersion(
  source: DeployedVersionSource,
): Promise<DeployedVersion | undefined> {
  if (source.kind === 'local') {
    return source.version ? { version: source.version, from: 'local stack' } : undefined;
  }
  let functionName = source.functionName;
  try {
    if (!functionName && source.mappingUuid) {
      const mapping = await source.lambda.send(
        new GetEventSourceMappingCommand({ UUID: source.mappingUuid }),
      );
      functionName = mapping.FunctionArn;
    }
    if (!functionName) return undefined;
    const config = await source.lambda.send(
      new GetFunctionConfigurationCommand({ FunctionName: functionName }),
    );
    const version = workerVersion({
      WORKER_VERSION: config.Environment?.Variables?.WORKER_VERSION,
      AWS_LAMBDA_FUNCTION_NAME: config.FunctionName,
      AWS_LAMBDA_FUNCTION_VERSION: config.Version,
    });
    return {
      version,
      from: config.FunctionName ?? functionName,
      ...(config.LastModified ? { lastModified: config.LastModified } : {}),
    };
  } catch (error) {
    throw new OperationError(
      `Cannot read the worker version of ${functionName ?? `the function of mapping ${source.mappingUuid}`}: ${(error as Error).name}: ${(error as Error).message}. Check the name (--function-name / WORKER_FUNCTION_NAME, the stack output WorkerFunctionName), AWS_REGION and lambda:GetFunctionConfiguration.`,
      { cause: error },
    );
  }
}
