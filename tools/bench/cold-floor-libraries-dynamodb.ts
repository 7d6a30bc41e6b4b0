import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { makeLibraries } from './cold-floor-libraries.ts';

/**
 * The floor of `cold-floor-dynamodb.ts` (an empty handler making the DynamoDB client) with the worker's libraries made too
 * (`makeLibraries`): what a cold start costs before a line of the engine runs (`tools/bench/cold-start-floor.ts`).
 */
const parts = [new DynamoDBClient({}), ...makeLibraries()];

/** Does nothing: the floor is the import. */
export const handler = async (): Promise<number> => parts.length;
