import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { localEndpointDefaults } from '../../../../lambda/aws/local-endpoint-defaults.ts';
import { type OpsSettings, requireSetting } from '../../ops-settings.ts';

/** What the DynamoDB ops commands read: the document client and the worker's table. */
export interface DynamoOpsTarget {
  readonly doc: DynamoDBDocumentClient;
  readonly tableName: string;
}

/** The table behind the DynamoDB ops store: its client opened on first use (tests pass one they hold). */
export interface DynamoOpsTable {
  /** The table and client; may throw the UsageError of a missing table setting. */
  target(): DynamoOpsTarget;
  /** Destroys the client, when it was opened. */
  close?(): void;
}

/**
 * The table of the settings (`--dynamodb-table` / `DYNAMODB_TABLE`, at `--dynamodb-endpoint` / `DYNAMODB_ENDPOINT`
 * or AWS in `--region`), opened by the first `target()` of `command`.
 */
export function openDynamoOpsTable(settings: OpsSettings, command: string): DynamoOpsTable {
  let client: DynamoDBClient | undefined;
  let target: DynamoOpsTarget | undefined;
  return {
    target() {
      const tableName = requireSetting(settings, 'dynamodbTable', command);
      client ??= new DynamoDBClient({
        // DynamoDB Local needs no account: a region and a fake key unless set (never for AWS's endpoint).
        ...localEndpointDefaults(settings.dynamodbEndpoint),
        ...(settings.region ? { region: settings.region } : {}),
        ...(settings.dynamodbEndpoint ? { endpoint: settings.dynamodbEndpoint } : {}),
      });
      target ??= { doc: DynamoDBDocumentClient.from(client), tableName };
      return target;
    },
    close() {
      client?.destroy();
    },
  };
}
