/**
 * The components of a local run that call SQS, S3 or DynamoDB, each signing with its own access key id so that
 * the local IAM layer ({@link startIamProxy}) knows whose role a request runs as:
 *
 * - `worker`: the Lambda worker function's role (the event source mapping polls with it too, as Lambda's does);
 * - `poller`: the Fargate poller's task role;
 * - `relay`: the outbox relay function's role;
 * - `admin`: the operator (queue setup, inspection, the ops CLI, a producer outside the stack): allowed everything,
 *   as an administrator's own credentials are.
 *
 * @internal
 */
export type LocalComponent = 'worker' | 'poller' | 'relay' | 'admin';

/** Every component that runs with a role of the synthesized stack (all but `admin`). @internal */
export type RoleComponent = Exclude<LocalComponent, 'admin'>;

/** The role components, in a stable order. @internal */
export const ROLE_COMPONENTS: readonly RoleComponent[] = ['worker', 'poller', 'relay'];

/**
 * The access key id of each component: 20 characters like an AWS key id, readable in a log. The secret is
 * `local` for every key; the layer does not verify signatures (only who signed).
 *
 * @internal
 */
export const LOCAL_ACCESS_KEY_IDS: Readonly<Record<LocalComponent, string>> = {
  worker: 'LOCALWORKER000000000',
  poller: 'LOCALPOLLER000000000',
  relay: 'LOCALRELAY0000000000',
  admin: 'LOCALADMIN0000000000',
};

/**
 * Static credentials of `component` for an AWS SDK client.
 *
 * @internal
 */
export function localCredentials(component: LocalComponent): {
  accessKeyId: string;
  secretAccessKey: string;
} {
  return { accessKeyId: LOCAL_ACCESS_KEY_IDS[component], secretAccessKey: 'local' };
}

/**
 * The component whose key id this is, or undefined for a key no component has.
 *
 * @internal
 */
export function componentOfKey(accessKeyId: string): LocalComponent | undefined {
  return (Object.entries(LOCAL_ACCESS_KEY_IDS) as [LocalComponent, string][]).find(
    ([, key]) => key === accessKeyId,
  )?.[0];
}
