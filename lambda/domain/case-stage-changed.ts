import * as z from 'zod/mini';
import { defineHandler } from '../index.ts';

/** The payload of `CaseStageChanged` v1, the message's contract on either store. */
export const caseStageChangedPayload = z.object({
  caseId: z.string().check(z.minLength(1), z.maxLength(200)),
  stage: z.string().check(z.minLength(1), z.maxLength(50)),
  version: z.int().check(z.minimum(1)),
});

/**
 * `CaseStageChanged` v1 `{ caseId, stage, version }`: creates the case or moves it forward only when
 * `version` is newer (pattern document §21). An older or equal version is a successful no-op: out-of-order
 * events never roll state back.
 */
export const caseStageChanged = defineHandler({
  messageType: 'CaseStageChanged',
  schemaVersion: 1,
  payload: caseStageChangedPayload,
  // Known from the payload: stored by the inbox claim, no statement after the handler.
  resultRef: ({ payload }) => `cases/${payload.caseId}@${payload.version}`,
  async handle({ sql, payload }) {
    const rows = await sql`
      insert into cases (case_id, stage, version)
      values (${payload.caseId}, ${payload.stage}, ${payload.version})
      on conflict (case_id) do update
        set stage = excluded.stage, version = excluded.version
        where cases.version < excluded.version
      returning version
    `;
    return { stale: rows.length === 0 };
  },
});
