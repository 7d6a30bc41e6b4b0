import postgres from 'postgres';
import { makeLibraries } from './cold-floor-libraries.ts';

/**
 * The floor of `cold-floor-postgres.ts` (an empty handler making postgres.js) with the worker's libraries made too
 * (`makeLibraries`): what a cold start costs before a line of the engine runs (`tools/bench/cold-start-floor.ts`).
 */
const parts = [
  postgres(process.env.DATABASE_URL ?? 'postgres://127.0.0.1:9/none', { max: 1, prepare: false }),
  ...makeLibraries(),
];

/** Does nothing: the floor is the import. */
export const handler = async (): Promise<number> => parts.length;
