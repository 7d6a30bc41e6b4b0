import { accessDeniedMessage } from './aws-refusal.ts';
import type { DescribedRequest } from './describe-request.ts';
import { type CallDecision, evaluateCall, type RefusalReason } from './evaluate-call.ts';
import { componentOfKey, type LocalComponent, type RoleComponent } from './local-identities.ts';
import {
  type LocalBinding,
  type PolicyDocument,
  type ResolvedPolicies,
  type ResolvedPrincipal,
  resolvePolicies,
} from './resolve-policies.ts';
import type { StackPolicySource } from './stack-policies.ts';

/** One refused call: which component, as which role, was refused what, and AWS's message. @internal */
export interface IamRefusal {
  readonly component: RoleComponent;
  /** Construct path of the role, where `lib/` grants it (`Worker/WorkerFunction/ServiceRole`). */
  readonly rolePath: string;
  readonly roleName: string;
  /** The cdk.json stage whose template the role comes from. */
  readonly stage: string;
  readonly service: string;
  readonly operation: string;
  readonly action: string;
  readonly resource: string;
  readonly reason: RefusalReason;
  /** AWS's message, as the caller receives it. */
  readonly message: string;
  readonly at: number;
}

/** What the authorizer decided for a request. @internal */
export type Authorization =
  | { readonly allowed: true; readonly component: LocalComponent }
  | { readonly allowed: false; readonly unknownKey: true; readonly accessKeyId: string | undefined }
  | { readonly allowed: false; readonly unknownKey: false; readonly refusal: IamRefusal };

/** A permission taken away from a component's evaluated policies (the proof tests' lever). @internal */
export interface RevokedAction {
  readonly component: RoleComponent;
  /** The IAM action, as the policy lists it (`sqs:GetQueueAttributes`). */
  readonly action: string;
}

/** Options of {@link createIamAuthorizer}. @internal */
export interface IamAuthorizerOptions {
  readonly region: string;
  /** Actions removed from the components' identity policies before evaluation. @default none */
  readonly revoke?: readonly RevokedAction[];
}

/** The local IAM decisions of a run: its bindings, and the authorization of each request. @internal */
export interface IamAuthorizer {
  /** Adds the local counterparts of one deployment (a queue and its DLQ, the bucket, the table). */
  bind(binding: Omit<LocalBinding, 'region'>): void;
  /** The decision on a described request (every one of its calls must be allowed). */
  authorize(request: DescribedRequest): Promise<Authorization>;
  /** The partition key attribute of a bound table (for `dynamodb:LeadingKeys`). */
  partitionKeyOf(tableName: string): string | undefined;
  /** The component's identity, resolved under the first binding (undefined: no stage has its role). */
  principal(component: RoleComponent): ResolvedPrincipal | undefined;
}

const asList = (value: unknown): unknown[] =>
  Array.isArray(value) ? value : value === undefined ? [] : [value];

/** The policies of `principal` without the revoked actions (a statement left with no action is dropped). */
function withoutRevoked(principal: ResolvedPrincipal, revoked: readonly string[]): ResolvedPrincipal {
  if (revoked.length === 0) return principal;
  const lower = new Set(revoked.map((action) => action.toLowerCase()));
  const policies = principal.policies.map((policy) => {
    const statements = asList(policy.document.Statement) as Record<string, unknown>[];
    const kept = statements.flatMap((statement) => {
      if (statement.Effect !== 'Allow' || statement.Action === undefined) return [statement];
      const actions = asList(statement.Action).filter((action) => !lower.has(String(action).toLowerCase()));
      return actions.length === 0 ? [] : [{ ...statement, Action: actions }];
    });
    return { name: policy.name, document: { ...policy.document, Statement: kept } as PolicyDocument };
  });
  return { ...principal, policies };
}

/**
 * The decisions of the local IAM layer: each request's signer is mapped to its component ({@link componentOfKey};
 * an unknown key is refused as AWS refuses one), `admin` is allowed everything, and every other component's calls
 * are evaluated ({@link evaluateCall}) against its role's policies from the synthesized stack, resolved under the
 * binding that owns the call's resource (a queue, the bucket, the table of one local deployment; the first
 * binding when none does, so a call on a resource the stack does not define is refused as in AWS).
 *
 * @internal
 */
export function createIamAuthorizer(source: StackPolicySource, options: IamAuthorizerOptions): IamAuthorizer {
  const bindings: ResolvedPolicies[] = [];
  const tables = new Map<string, string>();
  const revoke = options.revoke ?? [];
  const bind = (binding: Omit<LocalBinding, 'region'>) => {
    const resolved = resolvePolicies(source, { ...binding, region: options.region });
    const principals = new Map(
      [...resolved.principals].map(([component, principal]) => [
        component,
        withoutRevoked(
          principal,
          revoke.filter((entry) => entry.component === component).map((entry) => entry.action),
        ),
      ]),
    );
    bindings.push({ ...resolved, principals });
    if (binding.tableName) {
      const stage = source.stages.find((candidate) => candidate.bound.table);
      const table = stage?.bound.table ? stage.resources[stage.bound.table] : undefined;
      const schema = (table?.Properties?.KeySchema ?? []) as { AttributeName: string; KeyType: string }[];
      const hash = schema.find((key) => key.KeyType === 'HASH')?.AttributeName;
      if (hash) tables.set(binding.tableName, hash);
    }
  };
  const owning = (resource: string): ResolvedPolicies | undefined =>
    bindings.find((binding) =>
      binding.ownedArns.some(
        (arn) => resource === arn || resource.startsWith(`${arn}/`) || resource.startsWith(`${arn}/index/`),
      ),
    ) ?? bindings[0];
  const ensureBinding = () => {
    if (bindings.length === 0) bind({ queueName: 'unbound-queue', deadLetterQueueName: 'unbound-queue-dlq' });
  };
  return {
    bind,
    partitionKeyOf: (tableName) => tables.get(tableName),
    principal(component) {
      ensureBinding();
      return bindings[0]?.principals.get(component);
    },
    async authorize(request) {
      const component = request.accessKeyId ? componentOfKey(request.accessKeyId) : undefined;
      if (!component) return { allowed: false, unknownKey: true, accessKeyId: request.accessKeyId };
      if (component === 'admin') return { allowed: true, component };
      ensureBinding();
      for (const call of request.calls) {
        const binding = owning(call.resource) as ResolvedPolicies;
        const principal = binding.principals.get(component);
        const decision: CallDecision = principal
          ? await evaluateCall(principal, call, binding.resourcePolicies)
          : { allowed: false, reason: 'no-identity-allow' };
        if (decision.allowed) continue;
        const sessionArn =
          principal?.sessionArn ??
          `arn:aws:sts::000000000000:assumed-role/no-role-for-${component}/${component}`;
        const refusal: IamRefusal = {
          component,
          rolePath:
            principal?.rolePath ??
            `(no stage of ${source.stages.map((s) => s.stage).join(', ')} has a ${component} role)`,
          roleName: principal?.roleName ?? `no-role-for-${component}`,
          stage: principal?.stage ?? '',
          service: request.service ?? '',
          operation: request.operation,
          action: call.action,
          resource: call.resource,
          reason: decision.reason,
          message: accessDeniedMessage(request.service ?? '', {
            sessionArn,
            action: call.action,
            resource: call.resource,
            reason: decision.reason,
          }),
          at: Date.now(),
        };
        return { allowed: false, unknownKey: false, refusal };
      }
      return { allowed: true, component };
    },
  };
}
