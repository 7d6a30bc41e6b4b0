import {
  createIamAuthorizer,
  type IamAuthorizer,
  type IamRefusal,
  type RevokedAction,
} from './iam-authorizer.ts';
import { type IamProxy, startIamProxy } from './iam-proxy.ts';
import type { LocalBinding } from './resolve-policies.ts';
import { type StackPolicySource, stackPolicySource } from './stack-policies.ts';

/** Options of {@link startLocalIam}. @internal */
export interface LocalIamOptions {
  /** The store the run uses: which stages' roles apply (see `LOCAL_STAGES`). */
  readonly store: 'postgres' | 'dynamodb';
  readonly region: string;
  /** fauxqs (SQS and S3 on one port) or another SQS endpoint: fronted by a proxy when given. */
  readonly sqsUpstream?: string;
  /** DynamoDB Local: fronted by a proxy when given. */
  readonly dynamodbUpstream?: string;
  /** Permissions taken away before evaluation (the proof tests). */
  readonly revoke?: readonly RevokedAction[];
  /** Called for every refused call. */
  readonly onRefusal?: (refusal: IamRefusal) => void;
  /** The synthesized stages, when the caller has them already. @default synthesized (or read from the cache) */
  readonly source?: StackPolicySource;
}

/** The local IAM layer of a run: the proxies in front of the emulators and the refusals so far. @internal */
export interface LocalIam {
  /** The proxy's endpoint in front of `sqsUpstream` (SQS and S3), when given. */
  readonly sqsEndpoint: string | undefined;
  /** The proxy's endpoint in front of `dynamodbUpstream`, when given. */
  readonly dynamodbEndpoint: string | undefined;
  readonly authorizer: IamAuthorizer;
  /** Adds a deployment's local resources (queues, bucket, table) to evaluate against. */
  bind(binding: Omit<LocalBinding, 'region'>): void;
  /** Every call refused so far, oldest first. */
  refusals(): readonly IamRefusal[];
  stop(): Promise<void>;
}

/**
 * Starts the local IAM layer of a run: the policies of the stack's roles ({@link stackPolicySource}), and one
 * {@link startIamProxy} in front of each emulator given.
 *
 * @internal
 */
export async function startLocalIam(options: LocalIamOptions): Promise<LocalIam> {
  const source = options.source ?? (await stackPolicySource(options.store));
  const authorizer = createIamAuthorizer(source, { region: options.region, revoke: options.revoke });
  const proxies: IamProxy[] = [];
  const front = async (upstream: string | undefined) => {
    if (!upstream) return undefined;
    const proxy = await startIamProxy({
      upstream,
      authorizer,
      region: options.region,
      onRefusal: options.onRefusal,
    });
    proxies.push(proxy);
    return proxy.endpoint;
  };
  try {
    const sqsEndpoint = await front(options.sqsUpstream);
    const dynamodbEndpoint = await front(options.dynamodbUpstream);
    return {
      sqsEndpoint,
      dynamodbEndpoint,
      authorizer,
      bind: authorizer.bind,
      refusals: () => proxies.flatMap((proxy) => proxy.refusals).sort((a, b) => a.at - b.at),
      async stop() {
        await Promise.all(proxies.map((proxy) => proxy.stop()));
      },
    };
  } catch (error) {
    await Promise.all(proxies.map((proxy) => proxy.stop()));
    throw error;
  }
}

/**
 * One line per refused call, for a run's end: `IAM: worker (role Worker/WorkerFunction/ServiceRole, stage dev) was
 * refused sqs:SendMessage on arn:… (no identity-based policy allows it) ×3`.
 *
 * @internal
 */
export function describeRefusals(refusals: readonly IamRefusal[]): string[] {
  const counts = new Map<string, { refusal: IamRefusal; count: number }>();
  for (const refusal of refusals) {
    const key = `${refusal.component} ${refusal.action} ${refusal.resource} ${refusal.reason}`;
    const entry = counts.get(key);
    if (entry) entry.count += 1;
    else counts.set(key, { refusal, count: 1 });
  }
  return [...counts.values()].map(
    ({ refusal, count }) => `${describeRefusal(refusal)}${count > 1 ? ` ×${count}` : ''}`,
  );
}

const REASONS: Readonly<Record<IamRefusal['reason'], string>> = {
  'no-identity-allow': 'no identity-based policy allows it',
  'identity-deny': 'an identity-based policy denies it',
  'resource-deny': 'a resource-based policy denies it',
};

/**
 * One refused call in a line that names the component, its role (construct path, where `lib/` grants it), the
 * action, the resource and the reason.
 *
 * @internal
 */
export function describeRefusal(refusal: IamRefusal): string {
  return `IAM: ${refusal.component} (role ${refusal.rolePath}${refusal.stage ? `, stage ${refusal.stage}` : ''}) was refused ${refusal.action} on ${refusal.resource} (${REASONS[refusal.reason]})`;
}
