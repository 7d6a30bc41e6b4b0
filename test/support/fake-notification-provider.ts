import { createHash } from 'node:crypto';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll } from 'vitest';

/** A local HTTP notification service that honours `Idempotency-Key`, for tests. */
export interface FakeNotificationProvider {
  /** URL to POST notifications to. */
  readonly url: string;
  /** Requests received (every call, duplicates included). */
  readonly calls: number;
  /** Notifications actually applied ("sent"): one per distinct idempotency key. */
  readonly applied: number;
  /** The Idempotency-Key header of every request, in order. */
  readonly keys: readonly string[];
  /** Answers the next request with `status` without applying it. */
  failNext(status: number): void;
  /** Applies the next request, then closes the connection without answering (the answer is lost). */
  dropNextAnswer(): void;
  /** Runs inside every request before it is answered (e.g. to look at the database at call time). */
  onRequest?: (key: string) => Promise<void>;
}

const readBody = async (request: IncomingMessage) => {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
};

/**
 * Starts a fake notification provider on a free loopback port for the calling test file or describe block (stopped
 * after it).
 * Same key + same body → the first reference again (200), not applied twice; same key + other body → 422;
 * no key → 400; `failNext(status)` → that status once; `dropNextAnswer()` → applied, connection closed.
 */
export async function startFakeNotificationProvider(): Promise<FakeNotificationProvider> {
  const byKey = new Map<string, { reference: string; bodyHash: string }>();
  const keys: string[] = [];
  let calls = 0;
  let failStatus: number | undefined;
  let dropAnswer = false;
  const provider: FakeNotificationProvider = {
    url: '',
    get calls() {
      return calls;
    },
    get applied() {
      return byKey.size;
    },
    keys,
    failNext(status) {
      failStatus = status;
    },
    dropNextAnswer() {
      dropAnswer = true;
    },
  };
  const server = createServer(async (request, response) => {
    calls += 1;
    const body = await readBody(request);
    const key = String(request.headers['idempotency-key'] ?? '');
    keys.push(key);
    const answer = (status: number, json: unknown) => {
      response.writeHead(status, { 'content-type': 'application/json' });
      response.end(JSON.stringify(json));
    };
    if (!key) return answer(400, { error: 'Idempotency-Key required' });
    await provider.onRequest?.(key);
    if (failStatus !== undefined) {
      const status = failStatus;
      failStatus = undefined;
      return answer(status, { error: 'injected' });
    }
    const bodyHash = createHash('sha256').update(body).digest('hex');
    const existing = byKey.get(key);
    if (existing) {
      if (existing.bodyHash !== bodyHash) return answer(422, { error: 'key reused with another request' });
      return answer(200, { reference: existing.reference });
    }
    const reference = `ntf_${byKey.size + 1}_${key.length}`;
    byKey.set(key, { reference, bodyHash });
    if (dropAnswer) {
      dropAnswer = false;
      request.socket.destroy();
      return;
    }
    return answer(201, { reference });
  });
  // Registered before the first await: a describe block may start it while it is collected and await it in a hook.
  afterAll(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  Object.assign(provider, { url: `http://127.0.0.1:${port}/v1/notifications` });
  return provider;
}
