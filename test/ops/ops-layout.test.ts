import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const STORES = 'tools/ops/stores/';
/** The one module outside a store folder that builds a store (the CLI's choice of store). */
const PICKER = 'tools/ops/stores/open-ops-store.ts';

/** The project files `file` imports (static, type-only and `import()`), as TypeScript's pre-processor finds them. */
function importsOf(file: string): string[] {
  const { importedFiles } = ts.preProcessFile(readFileSync(join(ROOT, file), 'utf8'), true, true);
  return importedFiles
    .filter(({ fileName }) => fileName.startsWith('.'))
    .map(({ fileName }) =>
      relative(ROOT, normalize(join(ROOT, dirname(file), fileName)))
        .split('\\')
        .join('/'),
    );
}

const files = [
  ...readdirSync(join(ROOT, 'tools/ops'), { recursive: true, encoding: 'utf8' })
    .filter((name) => name.endsWith('.ts'))
    .map((name) => `tools/ops/${name.split('\\').join('/')}`),
  'bin/sqs-worker.ts',
];
const graph = new Map(files.map((file) => [file, importsOf(file)]));

/** Every file `file` reaches through its imports, with the first chain found to each. */
function reachable(file: string): Map<string, string> {
  const chains = new Map<string, string>();
  const queue: string[][] = [[file]];
  while (queue.length > 0) {
    const chain = queue.shift() as string[];
    for (const next of graph.get(chain.at(-1) as string) ?? []) {
      if (next === file || chains.has(next)) continue;
      chains.set(next, [...chain, next].join(' → '));
      queue.push([...chain, next]);
    }
  }
  return chains;
}

/** The chains from files under `from` to files under `to` (folders end with `/`, a file is named whole). */
function chains(from: (file: string) => boolean, to: (file: string) => boolean): string[] {
  return [...graph.keys()]
    .filter(from)
    .flatMap((file) => [...reachable(file)].filter(([target]) => to(target)).map(([, chain]) => chain));
}

const under = (folder: string) => (file: string) => file.startsWith(folder);

// The ops CLI picks its store once (tools/ops/ops-store.ts): the commands know the OpsStore contract, not a store.
describe('The layout of tools/ops/', () => {
  it('reads the import graph (the rules below check real edges)', () => {
    expect(graph.get(PICKER)).toEqual(
      expect.arrayContaining(['tools/ops/stores/postgres/index.ts', 'tools/ops/stores/dynamodb/index.ts']),
    );
    expect(reachable('bin/sqs-worker.ts').has('tools/ops/run-ops-command.ts')).toBe(true);
    expect(reachable('tools/ops/stores/dynamodb/dynamo-ops-store.ts').has('tools/ops/errors.ts')).toBe(true);
  });

  it('keeps the PostgreSQL and the DynamoDB ops store apart', () => {
    expect([
      ...chains(under(`${STORES}postgres/`), under(`${STORES}dynamodb/`)),
      ...chains(under(`${STORES}dynamodb/`), under(`${STORES}postgres/`)),
    ]).toEqual([]);
  });

  it('lets the commands and bin/sqs-worker.ts import no store but through the one picker', () => {
    // index.ts only re-exports the public surface, the stores' builders included.
    const outside = (file: string) => !file.startsWith(STORES) && file !== 'tools/ops/index.ts';
    const direct = [...graph]
      .filter(([file]) => outside(file))
      .flatMap(([file, imports]) =>
        imports.filter((to) => to.startsWith(STORES) && to !== PICKER).map((to) => `${file} → ${to}`),
      );

    expect(direct).toEqual([]);
  });

  it('keeps the stores free of the commands that choose them', () => {
    const choosers = ['tools/ops/run-ops-command.ts', 'tools/ops/index.ts', PICKER, 'bin/sqs-worker.ts'];

    expect(
      chains(
        (file) => file.startsWith(STORES) && file !== PICKER,
        (file) => choosers.includes(file),
      ),
    ).toEqual([]);
  });
});
