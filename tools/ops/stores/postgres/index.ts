/** The PostgreSQL store of the ops commands (`tools/ops/ops-store.ts`). */
export { type OpsDatabase, openOpsDatabase } from './open-ops-database.ts';
export { postgresOpsStore } from './postgres-ops-store.ts';
