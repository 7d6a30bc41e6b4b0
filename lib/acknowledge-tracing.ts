import { Validations } from 'aws-cdk-lib';
import type * as iam from 'aws-cdk-lib/aws-iam';

/**
 * cdk-nag IAM5: the X-Ray writes that `Tracing.ACTIVE` grants a traced function's role.
 *
 * @internal
 */
export function acknowledgeTracingWildcard(role: iam.IRole | undefined): void {
  if (!role) return;
  Validations.of(role).acknowledge({
    id: 'AwsSolutions-IAM5[Resource::*]',
    reason:
      'Active tracing (the tracing prop, off by default): CDK grants xray:PutTraceSegments and xray:PutTelemetryRecords, which support no resource-level permissions, so AWS requires Resource "*" for them. Acknowledged on traced functions only.',
  });
}
