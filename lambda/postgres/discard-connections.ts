import type { Socket } from 'node:net';
import type postgres from 'postgres';

/** Where a tracked socket factory keeps its open sockets (a property of the factory postgres.js holds). */
const OPEN_SOCKETS = Symbol('sqs-inbox-worker.openSockets');

/** A postgres.js `socket` option whose open sockets {@link discardConnections} can reach. */
type TrackedFactory<T> = ((target: T) => Promise<Socket>) & { readonly [OPEN_SOCKETS]: Set<Socket> };

/** Listeners told before a client's connections are discarded, by client. */
const listeners = new WeakMap<object, Set<() => void>>();

/**
 * Wraps a postgres.js `socket` option so that the sockets it opens can be discarded ({@link discardConnections}).
 * `connectOptions()` applies it to every client the project opens.
 *
 * @internal
 */
export function trackSockets<T>(factory: (target: T) => Promise<Socket>): TrackedFactory<T> {
  const open = new Set<Socket>();
  const tracked = async (target: T) => {
    const socket = await factory(target);
    open.add(socket);
    socket.once('close', () => open.delete(socket));
    return socket;
  };
  return Object.assign(tracked, { [OPEN_SOCKETS]: open });
}

/**
 * Registers `listener` to be called, synchronously, just before the connections of `sql` are discarded; returns
 * the function that removes it. The engine's transactions use it to send nothing more on a connection that is
 * about to go (`guarded-begin.ts`).
 *
 * @internal
 */
export function onConnectionsDiscarded(sql: postgres.Sql, listener: () => void): () => void {
  let set = listeners.get(sql);
  if (!set) {
    set = new Set();
    listeners.set(sql, set);
  }
  set.add(listener);
  const own = set;
  return () => {
    own.delete(listener);
  };
}

/**
 * Discards every connection of `sql`: destroys the socket of each, so postgres.js fails what waits on it
 * (`CONNECTION_CLOSED`) and opens a new connection for the next query. Returns how many sockets were destroyed; 0
 * for a client whose sockets are not tracked (made without `connectOptions()`), which nothing can discard.
 *
 * Why all of them: postgres.js has no client-side timeout and no way to close one connection — a connection whose
 * server stopped answering keeps its query, and a transaction keeps its connection reserved, for as long as the
 * socket stays open (a hung host, a network black hole: for ever), so an abandoned call would take its pool slot
 * with it — and it does not tell which connection serves which query. The engine calls this when it gives up on a
 * database call at its deadline (`DATABASE_TIMEOUT`), the moment it takes the database as down for the batch anyway:
 * the other connections' calls fail as connection losses and are retried like that call.
 *
 * @internal
 */
export function discardConnections(sql: postgres.Sql): number {
  const factory = (sql.options as { socket?: Partial<TrackedFactory<unknown>> } | undefined)?.socket;
  const open = factory?.[OPEN_SOCKETS];
  if (!open || open.size === 0) return 0;
  for (const listener of [...(listeners.get(sql) ?? [])]) listener();
  const sockets = [...open];
  for (const socket of sockets) socket.destroy();
  return sockets.length;
}
