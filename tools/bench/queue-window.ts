import { performance } from 'node:perf_hooks';
import type { QueueRig } from './queue-rig.ts';
import type { SqsCalls } from './sqs-delay-proxy.ts';

/** What one measured window saw: its time, the calls and round trips that crossed the proxies, the load. */
export interface WindowFigures {
  readonly seconds: number;
  /** SQS calls by action within the window. */
  readonly sqsCalls: SqsCalls;
  readonly dbRoundTrips: number;
  readonly dbStatements: number;
  /** Mean over the window's samples of the client backends running a statement (pg_stat_activity `active`). */
  readonly activeBackends: number;
  /** Mean of the client backends inside a transaction between statements (`idle in transaction`). */
  readonly idleInTransaction: number;
  /** Event loop utilization of this process (the consumer and the emulator) over the window, 0–1. */
  readonly eventLoopUtilization: number;
}

/** Milliseconds between two pg_stat_activity samples. */
const SAMPLE_MS = 20;

/**
 * Opens a measured window now: the proxies' counts and the event loop are read at both ends, and
 * pg_stat_activity is sampled every 20 ms on the rig's direct connection (never through the proxy, so the
 * sampler's own statements are not counted). `close()` ends the window and returns its figures.
 */
export async function openWindow(rig: QueueRig): Promise<{ close(): Promise<WindowFigures> }> {
  const [sqsBefore, dbBefore] = await Promise.all([rig.sqsProxy.calls(), rig.dbProxy.counts()]);
  const eluBefore = performance.eventLoopUtilization();
  const started = performance.now();
  const samples: { active: number; idle: number }[] = [];
  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      const [row] = await rig.admin<{ active: number; idle: number }[]>`
        select count(*) filter (where state = 'active')::int as active,
               count(*) filter (where state = 'idle in transaction')::int as idle
        from pg_stat_activity
        where backend_type = 'client backend' and pid <> pg_backend_pid() and datname = current_database()
      `;
      if (row) samples.push(row);
      await new Promise((resolve) => setTimeout(resolve, SAMPLE_MS));
    }
  })();
  return {
    async close() {
      const seconds = (performance.now() - started) / 1000;
      const eventLoopUtilization = performance.eventLoopUtilization(eluBefore).utilization;
      const [sqsAfter, dbAfter] = await Promise.all([rig.sqsProxy.calls(), rig.dbProxy.counts()]);
      sampling = false;
      await sampler;
      const mean = (pick: (sample: { active: number; idle: number }) => number) =>
        samples.length === 0 ? Number.NaN : samples.reduce((sum, s) => sum + pick(s), 0) / samples.length;
      const sqsCalls: Record<string, number> = {};
      for (const [action, count] of Object.entries(sqsAfter)) {
        const within = count - (sqsBefore[action] ?? 0);
        if (within > 0) sqsCalls[action] = within;
      }
      return {
        seconds,
        sqsCalls,
        dbRoundTrips: dbAfter.roundTrips - dbBefore.roundTrips,
        dbStatements: dbAfter.statements - dbBefore.statements,
        activeBackends: mean((s) => s.active),
        idleInTransaction: mean((s) => s.idle),
        eventLoopUtilization,
      };
    },
  };
}

/**
 * The time the database's backends spent running statements, per message: mean active backends × the window's
 * seconds ÷ its messages, in ms (on a machine with fewer free cores than active backends, waiting for a core counts).
 */
export function activeMsPerMessage(
  figures: WindowFigures & { readonly plan: { readonly messages: number } },
): number {
  return (figures.activeBackends * figures.seconds * 1000) / figures.plan.messages;
}
