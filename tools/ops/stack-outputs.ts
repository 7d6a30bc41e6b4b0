import { type CloudFormationClient, DescribeStacksCommand } from '@aws-sdk/client-cloudformation';
import { OperationError } from './errors.ts';

/** The part of `CloudFormationClient` the smoke uses (DescribeStacks); tests pass a fake. */
export type StackReader = Pick<CloudFormationClient, 'send'>;

/**
 * The outputs of a deployed stack (`QueueUrl`, `DeadLetterQueueUrl`, `EventSourceMappingUuid`, `AlarmTopicArn`,
 * `ProxyName`, `TableName`, …) by output key, from CloudFormation DescribeStacks.
 *
 * @throws OperationError naming the stack and the fix when it cannot be read (not deployed, another region, no
 * `cloudformation:DescribeStacks`).
 * @internal
 */
export async function readStackOutputs(
  cloudFormation: StackReader,
  stackName: string,
): Promise<Readonly<Record<string, string>>> {
  try {
    const { Stacks = [] } = await cloudFormation.send(new DescribeStacksCommand({ StackName: stackName }));
    const outputs: Record<string, string> = {};
    for (const output of Stacks[0]?.Outputs ?? []) {
      if (output.OutputKey && output.OutputValue !== undefined)
        outputs[output.OutputKey] = output.OutputValue;
    }
    return outputs;
  } catch (error) {
    throw new OperationError(
      `Cannot read the outputs of stack ${stackName}: ${(error as Error).name}: ${(error as Error).message}. Deploy it first (npx cdk deploy -c stage=…), check AWS_REGION and your credentials (cloudformation:DescribeStacks), or give the settings by flag or variable (--queue-url, --dlq-url, …).`,
      { cause: error },
    );
  }
}
