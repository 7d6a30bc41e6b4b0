import type { OpsSettings } from '../ops-settings.ts';
import type { OpsStore } from '../ops-store.ts';
import { dynamoOpsStore, openDynamoOpsTable } from './dynamodb/index.ts';
import { openOpsDatabase, postgresOpsStore } from './postgres/index.ts';

/**
 * The one place the ops CLI picks its store: `settings.store` (`--store` / `WORKER_STORE`, or the stage of a smoke
 * run), with the settings its clients need (`--database-url`, or `--dynamodb-table` and `--dynamodb-endpoint`),
 * opened when a command first reads it. `command` is named in the errors of a missing setting.
 */
export function openOpsStore(settings: OpsSettings, command: string): OpsStore {
  switch (settings.store) {
    case 'dynamodb':
      return dynamoOpsStore(openDynamoOpsTable(settings, command));
    case 'postgres':
      return postgresOpsStore(openOpsDatabase(settings, command));
  }
}
