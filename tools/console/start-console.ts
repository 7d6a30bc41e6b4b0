import type { AddressInfo } from 'node:net';
import type { OpsSession } from '../ops/run-ops-command.ts';
import type { ConsoleContext, ConsoleOptions } from './console-context.ts';
import type { ConsoleAddress } from './console-guard.ts';
import { createConsoleSecrets } from './console-secrets.ts';
import { createConsoleServer } from './console-server.ts';

/** Where to listen. */
export interface ConsoleListen {
  /** The address to bind. @default '127.0.0.1' (loopback only) */
  readonly host?: string;
  /** The port; 0 lets the system choose. @default 0 */
  readonly port?: number;
}

/** A console that is listening. */
export interface RunningConsole {
  /** The URL to open, with the run's token (`http://127.0.0.1:port/?token=…`). */
  readonly url: string;
  /** The console's origin, without the token. */
  readonly origin: string;
  /** Stops listening and waits for requests in progress. */
  close(): Promise<void>;
}

const LOOPBACK = new Set(['127.0.0.1', 'localhost', '::1']);

/** True when `host` is a loopback address: only the operator's own machine can connect. */
export function isLoopback(host: string): boolean {
  return LOOPBACK.has(host) || host.startsWith('127.');
}

/**
 * Starts the operator console on the session's store and clients: binds `host` (loopback by default), makes the run's
 * token and CSRF token, and returns the URL to open. The session stays open while the console runs; close the console
 * before the session.
 */
export async function startConsole(
  session: OpsSession,
  options: ConsoleOptions,
  listen: ConsoleListen = {},
): Promise<RunningConsole> {
  const host = listen.host ?? '127.0.0.1';
  const secrets = createConsoleSecrets();
  const ctx: ConsoleContext = { session, options, csrf: secrets.csrf };
  let address: ConsoleAddress | undefined;
  const app = await createConsoleServer(ctx, secrets, () => address as ConsoleAddress);
  await app.listen({ host, port: listen.port ?? 0 });
  const { port } = app.server.address() as AddressInfo;
  const shown = host.includes(':') ? `[${host}]` : host;
  const origin = `http://${shown}:${port}`;
  const names = isLoopback(host) ? [shown, 'localhost', '127.0.0.1', '[::1]'] : [shown];
  address = {
    origin,
    hosts: new Set(names.map((name) => `${name}:${port}`.toLowerCase())),
    cookie: `sqs_worker_console_${port}`,
  };
  return {
    url: `${origin}/?token=${secrets.token}`,
    origin,
    close: () => app.close(),
  };
}
