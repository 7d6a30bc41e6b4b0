import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** The package's entries: each subpath of `package.json` `exports` (`sqs-inbox-worker/postgres`) and its file. */
const PACKAGE = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
  name: string;
  exports: Record<string, string | { '@sqs-inbox-worker/source': string }>;
};
const ENTRY_FILES = new Map(
  Object.entries(PACKAGE.exports).map(([subpath, target]) => [
    subpath === '.' ? PACKAGE.name : `${PACKAGE.name}/${subpath.slice(2)}`,
    normalize(typeof target === 'string' ? target : target['@sqs-inbox-worker/source']),
  ]),
);
/** The entries under lambda/: facades that only re-export, for the users of one audience or store. */
const LAMBDA_ENTRIES = [...ENTRY_FILES.values()].filter((file) => file.startsWith('lambda/'));

/** Every `.ts` file under `folder`, as repository paths (`lambda/worker/outcome.ts`). */
function sourceFiles(folder: string): string[] {
  return readdirSync(join(ROOT, folder), { recursive: true, encoding: 'utf8' })
    .filter((name) => name.endsWith('.ts'))
    .map((name) => join(folder, name).split('\\').join('/'))
    .sort();
}

/**
 * The project files a file imports: static imports and re-exports, `import type`, and `import()` (a module loaded
 * lazily is a dependency all the same), as TypeScript's own pre-processor finds them — comments and strings are
 * not imports. Package imports are left out; the package's own name and subpaths are their entries' files.
 */
function importsOf(file: string): string[] {
  const text = readFileSync(join(ROOT, file), 'utf8');
  const { importedFiles } = ts.preProcessFile(text, true, true);
  return importedFiles.flatMap(({ fileName }) => {
    const entry = ENTRY_FILES.get(fileName);
    if (entry) return [entry];
    if (!fileName.startsWith('.')) return [];
    return [
      relative(ROOT, normalize(join(ROOT, dirname(file), fileName)))
        .split('\\')
        .join('/'),
    ];
  });
}

const graph = new Map(sourceFiles('lambda').map((file) => [file, importsOf(file)]));

/** Every file `file` reaches through its imports, itself excluded, with the chain that reaches each. */
function reachable(file: string): Map<string, string[]> {
  const chains = new Map<string, string[]>();
  const queue: string[][] = [[file]];
  while (queue.length > 0) {
    const chain = queue.shift() as string[];
    for (const next of graph.get(chain.at(-1) as string) ?? []) {
      if (next === file || chains.has(next)) continue;
      chains.set(next, [...chain, next]);
      queue.push([...chain, next]);
    }
  }
  return chains;
}

/** A dependency the rules refuse: `from` reaches `to` through `chain`. */
interface Violation {
  readonly from: string;
  readonly to: string;
  readonly chain: string;
}

/**
 * Files under `from` that reach (directly or through other files) a file under one of `forbidden`, each with the
 * first chain found. Folders end with `/`; a file is named whole. The package entries are not checked as a start:
 * an entry gathers its audience's names from several folders (`./postgres` re-exports the Lambda wiring of the
 * PostgreSQL store); the rule below keeps every module but the deployable entries and the example domain from
 * importing one, so no chain of the rules runs through an entry.
 */
function violations(from: string, forbidden: readonly string[]): Violation[] {
  const found: Violation[] = [];
  for (const file of graph.keys()) {
    if (!file.startsWith(from) || LAMBDA_ENTRIES.includes(file)) continue;
    for (const [to, chain] of reachable(file)) {
      if (forbidden.some((target) => to === target || (target.endsWith('/') && to.startsWith(target)))) {
        found.push({ from: file, to, chain: chain.join(' → ') });
      }
    }
  }
  return found;
}

/**
 * Dependencies that break a rule today and wait for a larger change: none. An entry names the importing file,
 * the file it reaches, and why it stays.
 */
const EXCEPTIONS: readonly { readonly from: string; readonly to: string; readonly why: string }[] = [];

const unexcepted = (found: readonly Violation[]) =>
  found
    .filter(({ from, to }) => !EXCEPTIONS.some((exception) => exception.from === from && exception.to === to))
    .map(({ chain }) => chain);

// DESIGN.md "Layout": dependencies point one way. The rules hold through every chain of imports, so a
// dependency cannot come back in through a shared folder (canary/, retention/, …).
describe('The layout of lambda/', () => {
  it('reads the import graph of lambda/ (the rules below check real edges)', () => {
    // Prepare / Act: the graph was read above. Assess: the engine and both runtimes are in it with their known edges.
    expect(graph.size).toBeGreaterThan(150);
    expect(graph.get('lambda/runtimes/lambda/create-worker.ts')).toContain(
      'lambda/runtimes/create-batch-engine.ts',
    );
    expect(graph.get('lambda/stores/dynamodb/dynamo-store.ts')).toContain(
      'lambda/stores/dynamodb/commit-dynamodb.ts',
    );
    expect(reachable('lambda/handlers/worker.ts').has('lambda/worker/batch-engine.ts')).toBe(true);
  });

  it('never imports lib/, tools/, bin/ or test/ from lambda/', () => {
    const outside = [...graph].flatMap(([file, imports]) =>
      imports.filter((to) => /^(lib|tools|bin|test)\//.test(to)).map((to) => `${file} → ${to}`),
    );

    expect(outside).toEqual([]);
  });

  it('keeps the engine (lambda/worker/) free of every store, runtime, connection plumbing and example domain', () => {
    const found = violations('lambda/worker/', [
      'lambda/stores/',
      'lambda/runtimes/',
      'lambda/postgres/',
      'lambda/domain/',
      'lambda/handlers/',
      ...LAMBDA_ENTRIES,
    ]);

    expect(unexcepted(found)).toEqual([]);
  });

  it('keeps every store free of the runtimes', () => {
    const found = violations('lambda/stores/', ['lambda/runtimes/', 'lambda/handlers/', ...LAMBDA_ENTRIES]);

    expect(unexcepted(found)).toEqual([]);
  });

  it('keeps the PostgreSQL and the DynamoDB store apart', () => {
    const found = [
      ...violations('lambda/stores/postgres/', ['lambda/stores/dynamodb/']),
      ...violations('lambda/stores/dynamodb/', ['lambda/stores/postgres/']),
    ];

    expect(unexcepted(found)).toEqual([]);
  });

  it('keeps the shared plumbing (postgres/, sqs/, payloads/, tracing/) free of every store and runtime', () => {
    const found = ['lambda/postgres/', 'lambda/sqs/', 'lambda/payloads/', 'lambda/tracing/'].flatMap(
      (folder) =>
        violations(folder, ['lambda/stores/', 'lambda/runtimes/', 'lambda/handlers/', ...LAMBDA_ENTRIES]),
    );

    expect(unexcepted(found)).toEqual([]);
  });

  it('reads every package entry as a file of the graph, the root first', () => {
    expect(LAMBDA_ENTRIES[0]).toBe('lambda/index.ts');
    expect(LAMBDA_ENTRIES.length).toBeGreaterThan(5);
    for (const entry of LAMBDA_ENTRIES) expect(graph.has(entry), entry).toBe(true);
  });

  it('lets only the deployable entries and the example domain import a package entry', () => {
    const importers = [...graph]
      .filter(([file]) => !file.startsWith('lambda/handlers/') && !file.startsWith('lambda/domain/'))
      .flatMap(([file, imports]) =>
        imports.filter((to) => LAMBDA_ENTRIES.includes(to)).map((to) => `${file} → ${to}`),
      );

    expect(importers).toEqual([]);
  });

  it('keeps every package entry to re-exports: no code, no import of its own', () => {
    const code = LAMBDA_ENTRIES.flatMap((entry) => {
      const source = ts.createSourceFile(
        entry,
        readFileSync(join(ROOT, entry), 'utf8'),
        ts.ScriptTarget.ES2022,
      );
      return source.statements
        .filter((statement) => !(ts.isExportDeclaration(statement) && statement.moduleSpecifier))
        .map((statement) => `${entry}: ${statement.getText(source).slice(0, 80)}`);
    });

    expect(code).toEqual([]);
  });

  it('lists no exception that no longer happens', () => {
    const stale = EXCEPTIONS.filter(({ from, to }) => !reachable(from).has(to));

    expect(stale).toEqual([]);
  });
});
