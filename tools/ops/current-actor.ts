import { userInfo } from 'node:os';

/** Who runs the command, for the audit trail: `SQS_WORKER_ACTOR`, else the OS user. */
export function currentActor(env: Record<string, string | undefined> = process.env): string {
  if (env.SQS_WORKER_ACTOR) return env.SQS_WORKER_ACTOR.slice(0, 200);
  try {
    return userInfo().username.slice(0, 200);
  } catch {
    return 'unknown';
  }
}
