import { randomUUID } from 'node:crypto';
import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import type { SQSRecord } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { RetryableError, TerminalError } from '../../lambda/errors.ts';
import { createWorker } from '../../lambda/runtimes/lambda/create-worker.ts';
import { defineHandler } from '../../lambda/stores/postgres/message-handler.ts';
import { createMemoryOutput } from '../../tools/ops/memory-output.ts';
import { inboxShow } from '../../tools/ops/stores/postgres/inbox-show.ts';
import { quarantineList } from '../../tools/ops/stores/postgres/quarantine-list.ts';
import { quarantineShow } from '../../tools/ops/stores/postgres/quarantine-show.ts';
import { captureOutput } from '../support/capture-output.ts';
import { createTestDatabase } from '../support/database.ts';
import { envelopeFactory, lambdaContext, sqsEvent, sqsRecordFactory } from '../support/sqs-event.ts';

/**
 * The promise "logs never contain payloads" checked end to end: one marker value travels inside payloads
 * through every failure path the engine has, in both commit modes, and must come out nowhere but where the
 * raw message is kept on purpose.
 *
 * Exempt by design, and only these:
 * - `worker_quarantine.body`: the raw SQS body, kept so that a fixed message can be released (re-sent) as it
 *   was; it is the quarantine's reason to exist.
 * - the body of `quarantine show <id>` (its "Body (contains payload values):" section, its JSON `body`): the
 *   one command that prints a body. It has no option to leave the body out: running it is the explicit request
 *   (its help says "WITH ITS BODY: prints payload values, on purpose"). The rest of its output is checked.
 * Everything else is checked: every captured log and EMF line (Logger at DEBUG), every column of every
 * `worker_inbox` and `worker_quarantine` row (their JSON form, so that no column is forgotten), and the output
 * of `inbox show`, `quarantine list` and `quarantine show`, as text and as JSON.
 */
const MARKER = `MARKER-${randomUUID()}`;

const db = await createTestDatabase();

/**
 * A handler that does what the payload's `action` says, so every failure path a handler can take is reached
 * with the marker inside the payload. It is careless on purpose, where docs/writing-handlers.md asks otherwise:
 * its error messages and its schema's messages quote the input, and the engine must keep the value out all the
 * same. Its schema holds the shapes whose validation errors used to carry input: record keys (plain and
 * validated), enums, literals, a strict object, and an author's error map and refinement that quote the input.
 */
const probe = defineHandler({
  messageType: 'MarkerProbe',
  schemaVersion: 1,
  payload: z.object({
    note: z.string(),
    action: z.enum(['ok', 'terminal', 'retryable', 'throw', 'violate', 'cast']),
    byEmail: z.record(z.email(), z.number().int()).optional(),
    stage: z.enum(['OPEN', 'CLOSED']).optional(),
    kind: z.literal('probe').optional(),
    priority: z
      .enum(['LOW', 'HIGH'], { error: (issue) => `priority ${String(issue.input)} is not LOW or HIGH` })
      .optional(),
    code: z
      .string()
      .refine((value) => value.startsWith('P-'), {
        error: (issue) => `code ${String(issue.input)} must start with P-`,
      })
      .optional(),
    options: z.strictObject({ verbose: z.boolean() }).optional(),
  }),
  async handle({ sql, payload }) {
    switch (payload.action) {
      // Careless messages that quote the payload: the engine must keep the value out all the same.
      case 'terminal':
        throw new TerminalError('PROBE_REJECTED', `note ${payload.note} was rejected`);
      case 'retryable':
        throw new RetryableError('PROBE_UNAVAILABLE', `note ${payload.note} cannot be handled yet`);
      case 'throw':
        // A careless handler: an unknown error whose message quotes the payload.
        throw new Error(`cannot handle note ${payload.note}`);
      case 'violate':
        // A unique violation: PostgreSQL's message and detail quote the key value.
        for (let i = 0; i < 2; i += 1) {
          await sql`
            insert into ledger_entries (entry_id, account_id, amount, currency, source_event_id)
            values (${`${payload.note}-${i}`}, ${payload.note}, 1, 'EUR', ${payload.note})
          `;
        }
        return {};
      case 'cast':
        // A data exception: PostgreSQL's message quotes the text it could not cast.
        await sql`select ${payload.note}::int`;
        return {};
      default:
        return { resultRef: 'probe/ok' };
    }
  },
});

/** A MarkerProbe envelope with its own key; `payload` replaces the default payload's fields. */
const probeEnvelope = (payload: Record<string, unknown>, overrides: Record<string, unknown> = {}) => {
  const id = randomUUID();
  return envelopeFactory({
    messageType: 'MarkerProbe',
    idempotencyKey: `probe:${id}`,
    aggregateType: 'probe',
    aggregateId: `PROBE-${id}`,
    payload: { note: MARKER, action: 'ok', ...payload },
    ...overrides,
  });
};

/**
 * One message per failure path, each carrying the marker in its payload, and the outcome it must get.
 * `second` messages go in a later invocation (they need the first one committed).
 */
function scenario() {
  const completed = probeEnvelope({});
  const paths: Array<{ path: string; body: unknown; code: string; message?: string; second?: boolean }> = [
    { path: 'success (the key the duplicate and the mismatch reuse)', body: completed, code: 'COMPLETED' },
    { path: 'invalid JSON body', body: `{"payload":{"note":"${MARKER}"`, code: 'INVALID_JSON' },
    {
      path: 'invalid envelope',
      body: { ...probeEnvelope({}), producer: undefined, occurredAt: MARKER, schemaVersion: MARKER },
      code: 'INVALID_ENVELOPE',
    },
    {
      path: 'invalid envelope: payload not an object',
      body: { ...probeEnvelope({}), payload: MARKER },
      code: 'INVALID_ENVELOPE',
    },
    {
      path: 'unknown messageType',
      body: probeEnvelope({}, { messageType: 'NoSuchMessage' }),
      code: 'UNKNOWN_MESSAGE_TYPE',
    },
    {
      path: 'unsupported schemaVersion',
      body: probeEnvelope({}, { schemaVersion: 2 }),
      code: 'UNSUPPORTED_SCHEMA_VERSION',
    },
    {
      path: 'invalid payload: a record value, the key carrying the marker',
      body: probeEnvelope({ byEmail: { [`${MARKER}@example.com`]: 'many' } }),
      code: 'INVALID_PAYLOAD',
      message: 'invalid payload: payload.byEmail.<key>: Invalid input: expected number, received string',
    },
    {
      path: 'invalid payload: a record key that fails its own schema',
      body: probeEnvelope({ byEmail: { [MARKER]: 1 } }),
      code: 'INVALID_PAYLOAD',
      message: 'invalid payload: payload.byEmail.<key>: Invalid key in record: Invalid email address',
    },
    {
      path: 'invalid payload: enum',
      body: probeEnvelope({ stage: MARKER }),
      code: 'INVALID_PAYLOAD',
      message: 'invalid payload: payload.stage: Invalid option: expected one of "OPEN"|"CLOSED"',
    },
    { path: 'invalid payload: literal', body: probeEnvelope({ kind: MARKER }), code: 'INVALID_PAYLOAD' },
    {
      path: "invalid payload: enum whose author's error quotes the input",
      body: probeEnvelope({ priority: MARKER }),
      code: 'INVALID_PAYLOAD',
      message: 'invalid payload: payload.priority: Invalid option: expected one of "LOW"|"HIGH"',
    },
    {
      path: "invalid payload: refinement whose author's error quotes the input",
      body: probeEnvelope({ code: MARKER }),
      code: 'INVALID_PAYLOAD',
      message: 'invalid payload: payload.code: code <value> must start with P-',
    },
    {
      path: 'invalid payload: unknown key of a strict object',
      body: probeEnvelope({ options: { verbose: true, [MARKER]: true } }),
      code: 'INVALID_PAYLOAD',
      message: 'invalid payload: payload.options: Unrecognized key: 1 key the schema does not define',
    },
    {
      path: 'invalid payload: wrong type, action carrying the marker',
      body: probeEnvelope({ action: MARKER, note: 42 }),
      code: 'INVALID_PAYLOAD',
    },
    {
      path: 'handler TerminalError quoting the payload',
      body: probeEnvelope({ action: 'terminal' }),
      code: 'PROBE_REJECTED',
      message: 'note <value> was rejected',
    },
    {
      path: 'handler RetryableError quoting the payload',
      body: probeEnvelope({ action: 'retryable' }),
      code: 'PROBE_UNAVAILABLE',
      message: 'note <value> cannot be handled yet',
    },
    {
      path: 'handler throws an Error quoting the payload',
      body: probeEnvelope({ action: 'throw' }),
      code: 'UNHANDLED_ERROR',
    },
    {
      path: 'constraint violation',
      body: probeEnvelope({ action: 'violate' }),
      code: 'CONSTRAINT_VIOLATION',
    },
    { path: 'data exception', body: probeEnvelope({ action: 'cast' }), code: 'DATA_EXCEPTION' },
    { path: 'duplicate', body: completed, code: 'DUPLICATE', second: true },
    {
      path: 'hash mismatch: same key, another payload',
      body: {
        ...completed,
        messageId: `msg_${randomUUID()}`,
        payload: { note: `${MARKER}-2`, action: 'ok' },
      },
      code: 'IDEMPOTENCY_HASH_MISMATCH',
      second: true,
    },
  ];
  return paths.map((entry) => ({ ...entry, record: sqsRecordFactory(entry.body) }));
}

/** Lambda delivers at most 10 records per batch. */
function batchesOf(records: SQSRecord[]): SQSRecord[][] {
  const batches: SQSRecord[][] = [];
  for (let i = 0; i < records.length; i += 10) batches.push(records.slice(i, i + 10));
  return batches;
}

/** Where the marker shows up, by place: empty when it shows up nowhere. */
function leaks(places: Record<string, string>): string[] {
  return Object.entries(places)
    .filter(([, text]) => text.includes(MARKER))
    .map(([place, text]) => {
      const at = text.indexOf(MARKER);
      return `${place}: …${text.slice(Math.max(0, at - 120), at + MARKER.length + 20)}…`;
    });
}

describe('Promise: logs, inbox, quarantine reasons and CLI tables never carry a payload value', () => {
  it.each(['per-message', 'per-batch'] as const)(
    'keeps a payload marker out of everything but the stored raw body, in commit mode %s',
    async (commitMode) => {
      // Prepare
      const consumer = `marker-${commitMode}`;
      const paths = scenario();
      // EMF lines are checked too: metrics are on for this worker only.
      process.env.POWERTOOLS_METRICS_DISABLED = 'false';
      const metrics = new Metrics({ namespace: 'SqsInboxWorkerTest', serviceName: consumer });
      process.env.POWERTOOLS_METRICS_DISABLED = 'true';
      const worker = createWorker({
        consumer,
        handlers: [probe],
        sql: db.sql,
        commitMode,
        failInvocationOnFullBatchFailure: false,
        logger: new Logger({ serviceName: consumer, logLevel: 'DEBUG' }),
        metrics,
      });
      const first = paths.filter((p) => !p.second).map((p) => p.record);
      const second = paths.filter((p) => p.second).map((p) => p.record);

      // Act: the worker, with everything it writes to stdout and stderr captured
      const captured = await captureOutput(async () => {
        for (const batch of [...batchesOf(first), second]) {
          await worker(sqsEvent(batch), lambdaContext());
        }
      });
      // Act: the operator's read commands, in-process, as text and as JSON
      const keys = (
        await db.sql<{ key: string }[]>`
          select idempotency_key as key from worker_inbox where consumer = ${consumer}
          union
          select idempotency_key from worker_quarantine where consumer = ${consumer} and idempotency_key is not null
          order by 1
        `
      ).map((row) => row.key);
      const quarantineIds = (
        await db.sql<{ id: string }[]>`
          select quarantine_id::text as id from worker_quarantine where consumer = ${consumer} order by 1
        `
      ).map((row) => row.id);
      const cli: Record<string, string> = {};
      for (const json of [false, true]) {
        const mode = json ? 'json' : 'text';
        for (const key of keys) {
          const out = createMemoryOutput({ json });
          await inboxShow({ sql: db.sql, out }, { consumer, idempotencyKey: key });
          cli[`inbox show ${key} (${mode})`] = out.stdout() + out.stderr();
        }
        const list = createMemoryOutput({ json });
        await quarantineList({ sql: db.sql, out: list }, { consumer, includeReleased: true, limit: 1000 });
        cli[`quarantine list (${mode})`] = list.stdout() + list.stderr();
      }
      const bodies: Record<string, string> = {};
      for (const id of quarantineIds) {
        const text = createMemoryOutput();
        await quarantineShow({ sql: db.sql, out: text }, { quarantineId: id });
        const [outside, body] = text.stdout().split('Body (contains payload values):\n');
        cli[`quarantine show ${id} (text, outside the body section)`] = (outside ?? '') + text.stderr();
        bodies[`quarantine show ${id}`] = body ?? '';
        const json = createMemoryOutput({ json: true });
        const { body: _body, ...entry } = (await quarantineShow(
          { sql: db.sql, out: json },
          { quarantineId: id },
        )) as unknown as Record<string, unknown>;
        const printed = json.lastJson<Record<string, unknown>>();
        delete printed.body;
        cli[`quarantine show ${id} (json, without body)`] = JSON.stringify(printed) + json.stderr();
        cli[`quarantine show ${id} (returned entry, without body)`] = JSON.stringify(entry);
      }

      // Assess: every path was reached and ended as it must
      const logLines = captured.lines.filter((line) => String(line.message).startsWith('worker_message_'));
      const ended = Object.fromEntries(
        logLines.map((line) => [line.messageId, String(line.failureCode ?? line.result)]),
      );
      expect(paths.map((p) => `${p.path} → ${ended[p.record.messageId]}`)).toEqual(
        paths.map((p) => `${p.path} → ${p.code}`),
      );
      expect(captured.error).toBeUndefined();
      // … and the messages still say which field broke which rule
      const messages = Object.fromEntries(logLines.map((line) => [line.messageId, line.failureMessage]));
      expect(
        paths.filter((p) => p.message).map((p) => `${p.path} → ${messages[p.record.messageId]}`),
      ).toEqual(paths.filter((p) => p.message).map((p) => `${p.path} → ${p.message}`));
      // … and the marker really travelled: every terminal message was quarantined with it in its raw body.
      expect(Object.keys(bodies)).toHaveLength(
        paths.filter(
          (p) => !['COMPLETED', 'DUPLICATE', 'PROBE_UNAVAILABLE', 'UNHANDLED_ERROR'].includes(p.code),
        ).length,
      );
      expect(Object.values(bodies).every((body) => body.includes(MARKER))).toBe(true);
      const inboxRows = await db.sql<{ row: string }[]>`
        select to_jsonb(i)::text as row from worker_inbox i where consumer = ${consumer}
      `;
      const quarantineRows = await db.sql<{ row: string; body: string }[]>`
        select (to_jsonb(q) - 'body')::text as row, body from worker_quarantine q where consumer = ${consumer}
      `;
      expect(inboxRows.length).toBeGreaterThan(10);
      expect(quarantineRows.length).toBeGreaterThan(10);
      expect(quarantineRows.every((row) => row.body.includes(MARKER))).toBe(true);

      // Assess: the marker is nowhere else
      expect(
        leaks({
          ...Object.fromEntries(captured.raw.split('\n').map((line, index) => [`log line ${index}`, line])),
          ...Object.fromEntries(inboxRows.map((row, index) => [`worker_inbox row ${index}`, row.row])),
          ...Object.fromEntries(
            quarantineRows.map((row, index) => [`worker_quarantine row ${index} (body excluded)`, row.row]),
          ),
          ...cli,
        }),
      ).toEqual([]);
    },
  );
});
