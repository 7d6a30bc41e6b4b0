// The bench's bare start for the cold-start floors (cold-start-floor.ts): an ESM handler with nothing in it.
export const handler = async () => {};
