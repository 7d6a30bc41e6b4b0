// What a synthesized role may do, decided by an IAM policy evaluator (@cloud-copilot/iam-simulate) over the
// role's policies with the template's references replaced by concrete values. It lives here, not in test/support:
// the evaluator is AGPL-3.0, a devDependency used by the CDK tests only, never by code that ships.
import { type EvaluationResult, runSimulation } from '@cloud-copilot/iam-simulate';
import type { Template } from 'aws-cdk-lib/assertions';

/** The account, region and partition the references resolve to. */
export const ACCOUNT = '123456789012';
const REGION = 'eu-west-1';

type Resources = Record<string, { Type: string; Properties?: Record<string, unknown> }>;

/** The ARN a resource's `Fn::GetAtt [id, 'Arn']` (or `Ref`, for types whose Ref is an ARN) stands for. */
function arnOf(resources: Resources, id: string): string {
  const type = resources[id]?.Type;
  switch (type) {
    case 'AWS::SQS::Queue':
      return `arn:aws:sqs:${REGION}:${ACCOUNT}:${id}`;
    case 'AWS::DynamoDB::Table':
      return `arn:aws:dynamodb:${REGION}:${ACCOUNT}:table/${id}`;
    case 'AWS::S3::Bucket':
      return `arn:aws:s3:::${id.toLowerCase()}`;
    case 'AWS::SecretsManager::Secret':
    case 'AWS::SecretsManager::SecretTargetAttachment':
      return `arn:aws:secretsmanager:${REGION}:${ACCOUNT}:secret:${id}-AbCdEf`;
    case 'AWS::RDS::DBProxy':
      return `arn:aws:rds:${REGION}:${ACCOUNT}:db-proxy:prx-${id.toLowerCase()}`;
    case 'AWS::IAM::Role':
      return `arn:aws:iam::${ACCOUNT}:role/${id}`;
    case 'AWS::KMS::Key':
      return `arn:aws:kms:${REGION}:${ACCOUNT}:key/${id}`;
    default:
      return `arn:aws:unknown:${REGION}:${ACCOUNT}:${id}`;
  }
}

/**
 * A template value with its intrinsic functions resolved: pseudo parameters, `Ref`, `Fn::GetAtt`, `Fn::Join`,
 * `Fn::Select` and `Fn::Split`. A `Ref` of a resource whose Ref is not an ARN resolves to its logical id (the
 * event source mapping's UUID in its ARN, a queue's name).
 */
export function resolveValue(value: unknown, resources: Resources): unknown {
  if (Array.isArray(value)) return value.map((each) => resolveValue(each, resources));
  if (typeof value !== 'object' || value === null) return value;
  const entries = Object.entries(value);
  const [name, argument] = entries[0] ?? [];
  if (entries.length === 1 && name === 'Ref') {
    const ref = argument as string;
    const pseudo: Record<string, string> = {
      'AWS::Partition': 'aws',
      'AWS::Region': REGION,
      'AWS::AccountId': ACCOUNT,
      'AWS::URLSuffix': 'amazonaws.com',
    };
    if (pseudo[ref]) return pseudo[ref];
    const type = resources[ref]?.Type;
    return type?.startsWith('AWS::SecretsManager::') ? arnOf(resources, ref) : ref;
  }
  if (entries.length === 1 && name === 'Fn::GetAtt') {
    const [id, attribute] = argument as [string, string];
    return /Arn$/.test(attribute) ? arnOf(resources, id) : `${id}.${attribute}`;
  }
  if (entries.length === 1 && name === 'Fn::Join') {
    const [separator, parts] = argument as [string, unknown[]];
    return (resolveValue(parts, resources) as unknown[]).join(separator);
  }
  if (entries.length === 1 && name === 'Fn::Split') {
    const [separator, source] = argument as [string, unknown];
    return String(resolveValue(source, resources)).split(separator);
  }
  if (entries.length === 1 && name === 'Fn::Select') {
    const [index, list] = argument as [number, unknown];
    return (resolveValue(list, resources) as unknown[])[Number(index)];
  }
  return Object.fromEntries(entries.map(([key, each]) => [key, resolveValue(each, resources)]));
}

/** The ARN of a resource of the template, as the resolved policies name it. */
export function resourceArn(template: Template, logicalId: string): string {
  return arnOf(template.toJSON().Resources as Resources, logicalId);
}

/** The identity policies (`AWS::IAM::Policy`) attached to a role of the template, resolved. */
export function rolePolicies(template: Template, roleLogicalId: string): { name: string; policy: unknown }[] {
  const resources = template.toJSON().Resources as Resources;
  return Object.entries(resources)
    .filter(
      ([, resource]) =>
        resource.Type === 'AWS::IAM::Policy' &&
        (resource.Properties?.Roles as { Ref?: string }[] | undefined)?.some(
          (role) => role.Ref === roleLogicalId,
        ),
    )
    .map(([id, resource]) => ({
      name: id,
      policy: resolveValue(resource.Properties?.PolicyDocument, resources),
    }));
}

/** The role (logical id) of the Lambda function whose description starts with `description`. */
export function functionRole(template: Template, description: string): string {
  const functions = Object.values(template.findResources('AWS::Lambda::Function')).filter((fn) =>
    String(fn.Properties.Description ?? '').startsWith(description),
  );
  const [fn] = functions;
  if (!fn || functions.length !== 1) {
    throw new Error(`expected one function described "${description}…", found ${functions.length}`);
  }
  return (fn.Properties.Role as { 'Fn::GetAtt': [string, string] })['Fn::GetAtt'][0];
}

/** One request to evaluate: an action on a resource ARN, with the request's context keys. */
export interface PolicyRequest {
  readonly action: string;
  readonly resource: string;
  readonly context?: Readonly<Record<string, string | readonly string[]>>;
}

/**
 * What the role's identity policies decide for a request (TLS on, as every SDK call is): `Allowed`,
 * `ImplicitlyDenied` or `ExplicitlyDenied`. Resource policies, SCPs and boundaries are left out: a refusal here is a
 * refusal in AWS.
 *
 * @throws Error when the evaluator rejects the policies or the request (a malformed policy).
 */
export async function evaluateRole(
  template: Template,
  roleLogicalId: string,
  request: PolicyRequest,
): Promise<EvaluationResult> {
  const result = await runSimulation(
    {
      request: {
        principal: `arn:aws:iam::${ACCOUNT}:role/${roleLogicalId}`,
        action: request.action,
        resource: { resource: request.resource, accountId: ACCOUNT },
        contextVariables: {
          'aws:SecureTransport': 'true',
          ...(request.context as Record<string, string | string[]> | undefined),
        },
      },
      identityPolicies: rolePolicies(template, roleLogicalId),
      serviceControlPolicies: [],
      resourceControlPolicies: [],
    },
    {},
  );
  if (result.resultType === 'error') {
    throw new Error(`the policy evaluator refused the request: ${JSON.stringify(result.errors)}`);
  }
  return result.overallResult;
}
