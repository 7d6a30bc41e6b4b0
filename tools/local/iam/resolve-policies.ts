import type { RoleComponent } from './local-identities.ts';
import type { StackPolicySource, SynthesizedStage, TemplateResource } from './stack-policies.ts';

/** The account fauxqs and DynamoDB Local answer for (fauxqs's queue URLs and ARNs carry it). @internal */
export const LOCAL_ACCOUNT_ID = '000000000000';

/**
 * The local counterparts of the stack's resources: the names a local run created for the source queue, its DLQ,
 * the payload bucket and the table. Unset ones resolve to names no local resource has.
 *
 * @internal
 */
export interface LocalBinding {
  readonly region: string;
  readonly queueName: string;
  readonly deadLetterQueueName: string;
  readonly bucketName?: string;
  readonly tableName?: string;
}

/** An IAM policy document. @internal */
export interface PolicyDocument {
  readonly Version?: string;
  readonly Statement: readonly Record<string, unknown>[] | Record<string, unknown>;
}

/** The identity of one component under one binding: its role and the role's policies, resolved. @internal */
export interface ResolvedPrincipal {
  readonly component: RoleComponent;
  /** The stage whose template the role comes from. */
  readonly stage: string;
  /** Construct path of the role (where its grants are made). */
  readonly rolePath: string;
  readonly roleName: string;
  /** The session's ARN, as AWS names the caller in a refusal (`arn:aws:sts::…:assumed-role/<role>/<session>`). */
  readonly sessionArn: string;
  /** Identity policies attached to the role (inline and `AWS::IAM::Policy`/`ManagedPolicy` ones). */
  readonly policies: readonly { readonly name: string; readonly document: PolicyDocument }[];
  /** AWS managed policies attached by ARN: not evaluated (see docs/local.md). */
  readonly managedPolicyArns: readonly string[];
}

/** What one binding resolves to: each component's identity and the resource policies by resource ARN. @internal */
export interface ResolvedPolicies {
  readonly binding: LocalBinding;
  readonly principals: ReadonlyMap<RoleComponent, ResolvedPrincipal>;
  /** Resource policies (queue and bucket policies) by the ARN of the queue or bucket they are attached to. */
  readonly resourcePolicies: ReadonlyMap<string, PolicyDocument>;
  /** ARNs of the bound resources (queues, bucket, table): a request on one of them is this binding's. */
  readonly ownedArns: readonly string[];
}

type Json = unknown;

/** Names and ARNs of the bound resources of one stage under `binding`; everything else gets a placeholder. */
function resourceNames(stage: SynthesizedStage, binding: LocalBinding) {
  const { region } = binding;
  const queueArn = (name: string) => `arn:aws:sqs:${region}:${LOCAL_ACCOUNT_ID}:${name}`;
  const queueUrl = (name: string) => `https://sqs.${region}.amazonaws.com/${LOCAL_ACCOUNT_ID}/${name}`;
  const named = new Map<string, { ref: string; arn: string }>();
  named.set(stage.bound.queue, { ref: queueUrl(binding.queueName), arn: queueArn(binding.queueName) });
  named.set(stage.bound.deadLetterQueue, {
    ref: queueUrl(binding.deadLetterQueueName),
    arn: queueArn(binding.deadLetterQueueName),
  });
  if (stage.bound.payloadBucket) {
    // A run without a bucket binds none: the grants then name a bucket no local request reaches.
    const name = binding.bucketName ?? `unbound-${stage.bound.payloadBucket.toLowerCase()}`;
    named.set(stage.bound.payloadBucket, { ref: name, arn: `arn:aws:s3:::${name}` });
  }
  if (stage.bound.table) {
    const name = binding.tableName ?? `unbound-${stage.bound.table}`;
    named.set(stage.bound.table, {
      ref: name,
      arn: `arn:aws:dynamodb:${region}:${LOCAL_ACCOUNT_ID}:table/${name}`,
    });
  }
  return named;
}

/**
 * Resolves the intrinsic functions a CDK template uses in its policies (`Ref`, `Fn::GetAtt`, `Fn::Join`, `Fn::Sub`,
 * `Fn::Select`, `Fn::Split`) to local values: the bound queues, bucket and table to their local names and ARNs,
 * pseudo parameters to the local region and account, and every other resource to a placeholder ARN that no
 * local request names (an RDS proxy, an event source mapping: services the layer does not front).
 */
function resolver(stage: SynthesizedStage, binding: LocalBinding) {
  const named = resourceNames(stage, binding);
  const pseudo: Record<string, string> = {
    'AWS::Partition': 'aws',
    'AWS::Region': binding.region,
    'AWS::AccountId': LOCAL_ACCOUNT_ID,
    'AWS::URLSuffix': 'amazonaws.com',
    'AWS::StackName': stage.stackName,
    'AWS::NoValue': '',
  };
  const placeholder = (id: string, attribute: string) =>
    `arn:aws:cloudformation:${binding.region}:${LOCAL_ACCOUNT_ID}:unresolved/${id}/${attribute}`;
  const ref = (id: string): string => pseudo[id] ?? named.get(id)?.ref ?? placeholder(id, 'Ref');
  const getAtt = (id: string, attribute: string): string =>
    attribute === 'Arn' && named.has(id)
      ? (named.get(id) as { arn: string }).arn
      : placeholder(id, attribute);
  const resolve = (value: Json): Json => {
    if (Array.isArray(value)) return value.map(resolve);
    if (value === null || typeof value !== 'object') return value;
    const entries = Object.entries(value as Record<string, Json>);
    const [first] = entries;
    if (entries.length === 1 && first) {
      const [key, argument] = first;
      if (key === 'Ref') return ref(String(argument));
      if (key === 'Fn::GetAtt') {
        const [id, attribute] = Array.isArray(argument) ? argument : String(argument).split('.');
        return getAtt(String(id), String(attribute));
      }
      if (key === 'Fn::Join') {
        const [separator, parts] = argument as [string, Json[]];
        return (resolve(parts) as Json[]).map(String).join(separator);
      }
      if (key === 'Fn::Select') {
        const [index, list] = argument as [number | string, Json];
        return (resolve(list) as Json[])[Number(resolve(index))] ?? 'unresolved';
      }
      if (key === 'Fn::Split') {
        const [separator, text] = argument as [string, Json];
        return String(resolve(text)).split(separator);
      }
      if (key === 'Fn::Sub') {
        const [text, variables = {}] = Array.isArray(argument) ? argument : [argument, {}];
        const own = resolve(variables) as Record<string, string>;
        return String(text).replace(/\$\{([^}]+)\}/g, (_, name: string) => {
          if (name in own) return String(own[name]);
          const [id, attribute] = name.split('.');
          return attribute ? getAtt(id as string, attribute) : ref(name);
        });
      }
    }
    return Object.fromEntries(entries.map(([key, item]) => [key, resolve(item)]));
  };
  return { resolve, named };
}

/** The logical ids a `Roles`/`Queues`/`Bucket` property lists (`[{ Ref: id }]` or `{ Ref: id }`). */
function referencedIds(value: Json): string[] {
  const list = Array.isArray(value) ? value : [value];
  return list
    .map((item) => (item as { Ref?: string } | null)?.Ref)
    .filter((id): id is string => typeof id === 'string');
}

/** The identity of `component` in `stage`, resolved under `binding`. */
function resolvePrincipal(
  stage: SynthesizedStage,
  component: RoleComponent,
  resolve: (value: Json) => Json,
): ResolvedPrincipal | undefined {
  const role = stage.roles[component];
  if (!role) return undefined;
  const resources = Object.entries(stage.resources) as [string, TemplateResource][];
  const roleProperties = stage.resources[role.logicalId]?.Properties ?? {};
  const policies: { name: string; document: PolicyDocument }[] = [];
  for (const inline of (roleProperties.Policies as Json[] | undefined) ?? []) {
    const { PolicyName, PolicyDocument } = inline as { PolicyName: string; PolicyDocument: Json };
    policies.push({ name: PolicyName, document: resolve(PolicyDocument) as PolicyDocument });
  }
  for (const [id, resource] of resources) {
    if (resource.Type !== 'AWS::IAM::Policy' && resource.Type !== 'AWS::IAM::ManagedPolicy') continue;
    if (!referencedIds(resource.Properties?.Roles).includes(role.logicalId)) continue;
    policies.push({ name: id, document: resolve(resource.Properties?.PolicyDocument) as PolicyDocument });
  }
  const roleName = `${stage.stackName}-${role.logicalId}`.slice(0, 64);
  return {
    component,
    stage: stage.stage,
    rolePath: role.path,
    roleName,
    sessionArn: `arn:aws:sts::${LOCAL_ACCOUNT_ID}:assumed-role/${roleName}/${component}`,
    policies,
    managedPolicyArns: ((roleProperties.ManagedPolicyArns as Json[] | undefined) ?? []).map((arn) =>
      String(resolve(arn)),
    ),
  };
}

/**
 * Resolves the policies of `source` under `binding`: each component's identity policies from the first stage
 * that has its role, and the queue and bucket policies of the bound resources (the first stage's: every stage
 * attaches the same ones).
 *
 * @internal
 */
export function resolvePolicies(source: StackPolicySource, binding: LocalBinding): ResolvedPolicies {
  const principals = new Map<RoleComponent, ResolvedPrincipal>();
  const resourcePolicies = new Map<string, PolicyDocument>();
  const ownedArns = new Set<string>();
  for (const stage of source.stages) {
    const { resolve, named } = resolver(stage, binding);
    for (const component of Object.keys(stage.roles) as RoleComponent[]) {
      if (principals.has(component)) continue;
      const principal = resolvePrincipal(stage, component, resolve);
      if (principal) principals.set(component, principal);
    }
    for (const { arn } of named.values()) ownedArns.add(arn);
    for (const resource of Object.values(stage.resources)) {
      const targets =
        resource.Type === 'AWS::SQS::QueuePolicy'
          ? referencedIds(resource.Properties?.Queues)
          : resource.Type === 'AWS::S3::BucketPolicy'
            ? referencedIds(resource.Properties?.Bucket)
            : [];
      for (const id of targets) {
        const arn = named.get(id)?.arn;
        if (!arn || resourcePolicies.has(arn)) continue;
        resourcePolicies.set(arn, resolve(resource.Properties?.PolicyDocument) as PolicyDocument);
      }
    }
    // A table's resource policy is a property of the table itself.
    const table = stage.bound.table ? stage.resources[stage.bound.table] : undefined;
    const tablePolicy = (table?.Properties?.ResourcePolicy as { PolicyDocument?: Json } | undefined)
      ?.PolicyDocument;
    const tableArn = stage.bound.table ? named.get(stage.bound.table)?.arn : undefined;
    if (tablePolicy && tableArn && !resourcePolicies.has(tableArn)) {
      resourcePolicies.set(tableArn, resolve(tablePolicy) as PolicyDocument);
    }
  }
  return { binding, principals, resourcePolicies, ownedArns: [...ownedArns] };
}
