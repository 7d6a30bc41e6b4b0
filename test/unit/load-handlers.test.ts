import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { HandlersModuleError } from '../../tools/local/errors.ts';
import { loadHandlers, resolveHandlersPath } from '../../tools/local/load-handlers.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const saved = process.env.DATABASE_URL;
afterEach(() => {
  if (saved === undefined) delete process.env.DATABASE_URL;
  else process.env.DATABASE_URL = saved;
});

describe('Function: loadHandlers() (npm start -- --handlers)', () => {
  it("returns the README's first-handler module's handlers, the list its handler deploys", async () => {
    // Prepare: what npm start sets before it loads the module (createWorkerFromConfig reads it at load; no connect).
    process.env.DATABASE_URL = 'postgres://worker@127.0.0.1:5432/cases';

    // Act
    const loaded = await loadHandlers('test/fixtures/first-handler/invoice-worker.ts', ROOT);

    // Assess
    expect(loaded.file).toBe(join(ROOT, 'test/fixtures/first-handler/invoice-worker.ts'));
    expect(loaded.handlers.map((h) => `${h.messageType} v${h.schemaVersion}`)).toEqual(['InvoiceIssued v1']);
  });

  it('names the path, where it looked and the fix when the file does not exist', async () => {
    // Act
    const error = await loadHandlers('./src/invoice-handlers.ts', ROOT).catch((e: unknown) => e);

    // Assess
    expect(error).toBeInstanceOf(HandlersModuleError);
    expect((error as Error).message).toBe(
      `--handlers ./src/invoice-handlers.ts: no such file (looked for ${join(ROOT, 'src/invoice-handlers.ts')}). Give the path of a TypeScript or JavaScript module, relative to ${ROOT}, and export your handlers from it: \`export const handlers = [myHandler];\` (see README.md, "A first handler").`,
    );
    expect(() => resolveHandlersPath('test', ROOT)).toThrow(/--handlers test: no such file/);
  });

  it('names what the module exports when it has no `handlers` export', async () => {
    // Act
    const error = await loadHandlers('test/fixtures/handlers-modules/no-handlers-export.ts', ROOT).catch(
      (e: unknown) => e,
    );

    // Assess
    expect(error).toBeInstanceOf(HandlersModuleError);
    expect((error as Error).message).toBe(
      '--handlers test/fixtures/handlers-modules/no-handlers-export.ts: the module has no `handlers` export (it exports pinged); export your handlers from it: `export const handlers = [myHandler];` (see README.md, "A first handler").',
    );
  });

  it('refuses a `handlers` export that is not a list of defineHandler results', async () => {
    // Act
    const error = await loadHandlers('test/fixtures/handlers-modules/not-handlers.ts', ROOT).catch(
      (e: unknown) => e,
    );

    // Assess
    expect((error as Error).message).toMatch(
      /^--handlers test\/fixtures\/handlers-modules\/not-handlers\.ts: `handlers` must be a non-empty list of defineHandler\(\{ messageType, schemaVersion, payload, handle \}\) results \(given a list of 1\)/,
    );
  });

  it('reports a module that fails to load with its error on one line', async () => {
    // Prepare: the first-handler module reads its configuration when it loads.
    delete process.env.DATABASE_URL;

    // Act
    const error = await loadHandlers('test/fixtures/handlers-modules/ping.ts', ROOT).catch((e: unknown) => e);

    // Assess
    expect((error as Error).message).toMatch(
      /^--handlers test\/fixtures\/handlers-modules\/ping\.ts: the module failed to load: .*DB_HOST/,
    );
  });
});
