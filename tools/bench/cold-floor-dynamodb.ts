import { DynamoDBClient } from '@aws-sdk/client-dynamodb';

/**
 * The cold-start floor of a DynamoDB worker (`tools/bench/cold-floor.ts`): an empty handler that imports the DynamoDB
 * client and makes it at module scope, as every handler on it does (nothing is sent before a command).
 */
const client = new DynamoDBClient({});

/** Does nothing: the floor is the import. */
export const handler = async (): Promise<string> => typeof client.send;
