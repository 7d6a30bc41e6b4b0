import { runSimulation } from '@cloud-copilot/iam-simulate';
import type { AuthorizationCall } from './describe-request.ts';
import { LOCAL_ACCOUNT_ID, type PolicyDocument, type ResolvedPrincipal } from './resolve-policies.ts';

/**
 * Why a call was refused, in AWS's words: no identity-based policy allows it (an implicit deny), or a statement
 * denies it explicitly in an identity-based or a resource-based policy.
 *
 * @internal
 */
export type RefusalReason = 'no-identity-allow' | 'identity-deny' | 'resource-deny';

/** The decision on one call. @internal */
export type CallDecision =
  | { readonly allowed: true }
  | { readonly allowed: false; readonly reason: RefusalReason; readonly detail?: string };

/**
 * `aws:SecureTransport` of every local request: **true**. The local endpoints speak plain HTTP on 127.0.0.1, but
 * the deployed code reaches AWS over TLS only (the SDK's endpoints are `https`), so the stack's TLS-only
 * statements (`Deny … aws:SecureTransport false` on the queues and the buckets) must not refuse what they never
 * refuse in AWS. A client that turned TLS off would be refused there, and is not here.
 *
 * @internal
 */
export const LOCAL_SECURE_TRANSPORT = 'true';

/**
 * The resource policy that applies to `resource`: the queue's or the table's own, or the bucket's for an object.
 */
function resourcePolicyOf(
  resource: string,
  policies: ReadonlyMap<string, PolicyDocument>,
): PolicyDocument | undefined {
  if (resource.startsWith('arn:aws:s3:::')) {
    return policies.get(`arn:aws:s3:::${resource.slice('arn:aws:s3:::'.length).split('/')[0]}`);
  }
  if (resource.startsWith('arn:aws:dynamodb:')) return policies.get(resource.replace(/\/index\/.*$/, ''));
  return policies.get(resource);
}

/**
 * Evaluates one call of `principal` as AWS's policy evaluation would, with `@cloud-copilot/iam-simulate`
 * (`runSimulation`, strict mode): the role's identity policies and the resource's policy, in one account (so
 * either an identity or a resource allow suffices and any explicit deny wins). No SCP, RCP, permissions
 * boundary or session policy: the stack defines none (see docs/local.md for what is not evaluated).
 *
 * A policy the simulator cannot read refuses the call, naming the problem: a check that cannot run must not
 * pass silently.
 *
 * @internal
 */
export async function evaluateCall(
  principal: ResolvedPrincipal,
  call: AuthorizationCall,
  resourcePolicies: ReadonlyMap<string, PolicyDocument>,
): Promise<CallDecision> {
  const resourcePolicy = resourcePolicyOf(call.resource, resourcePolicies);
  const result = await runSimulation(
    {
      request: {
        principal: principal.sessionArn,
        action: call.action,
        resource: { resource: call.resource, accountId: LOCAL_ACCOUNT_ID },
        contextVariables: {
          'aws:SecureTransport': LOCAL_SECURE_TRANSPORT,
          'aws:PrincipalAccount': LOCAL_ACCOUNT_ID,
          'aws:PrincipalArn': `arn:aws:iam::${LOCAL_ACCOUNT_ID}:role/${principal.roleName}`,
          ...call.context,
        },
      },
      identityPolicies: principal.policies.map((policy) => ({ name: policy.name, policy: policy.document })),
      serviceControlPolicies: [],
      resourceControlPolicies: [],
      ...(resourcePolicy ? { resourcePolicy } : {}),
    },
    { simulationMode: 'Strict' },
  );
  if (result.resultType === 'error') {
    return { allowed: false, reason: 'no-identity-allow', detail: result.errors.message };
  }
  if (result.overallResult === 'Allowed') return { allowed: true };
  const analyses = result.resultType === 'single' ? [result.result] : result.results;
  const explicitly = (which: 'identityAnalysis' | 'resourceAnalysis') =>
    analyses.some((entry) => entry.analysis[which]?.result === 'ExplicitlyDenied');
  if (explicitly('resourceAnalysis')) return { allowed: false, reason: 'resource-deny' };
  if (explicitly('identityAnalysis')) return { allowed: false, reason: 'identity-deny' };
  return { allowed: false, reason: 'no-identity-allow' };
}
