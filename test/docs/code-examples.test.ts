import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { afterAll, describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
/** The first ```ts block after `heading` in the Markdown file `page`. */
function codeBlock(page: string, heading: string): string {
  const markdown = readFileSync(join(ROOT, page), 'utf8');
  const section = markdown.indexOf(`\n${heading}\n`);
  if (section < 0) throw new Error(`${page} has no "${heading}" section`);
  const match = /```ts\n([\s\S]*?)\n```/.exec(markdown.slice(section));
  if (!match?.[1]) throw new Error(`the "${heading}" section of ${page} has no \`\`\`ts block`);
  return match[1];
}

const firstHandlerBlock = () => codeBlock('README.md', '## A first handler');

/**
 * Type-checks one file with the project's tsconfig.json. The file sits inside the repository (in the ignored
 * `.tmp/`), so `sqs-inbox-worker` resolves the way it does for project code: through package.json `exports`
 * (a package may import itself by name).
 */
function typeCheck(file: string): string[] {
  const configPath = join(ROOT, 'tsconfig.json');
  const { config } = ts.readConfigFile(configPath, ts.sys.readFile);
  const { options } = ts.parseJsonConfigFileContent(config, ts.sys, ROOT, undefined, configPath);
  const program = ts.createProgram([file], { ...options, noEmit: true });
  const source = program.getSourceFile(file);
  return [...program.getSyntacticDiagnostics(source), ...program.getSemanticDiagnostics(source)].map(
    (diagnostic) => {
      const position =
        diagnostic.file && diagnostic.start !== undefined
          ? diagnostic.file.getLineAndCharacterOfPosition(diagnostic.start)
          : undefined;
      const where = position ? `line ${position.line + 1}: ` : '';
      return where + ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n');
    },
  );
}

describe('Document: README.md, first handler', () => {
  // Inside the repository (git-ignored), so that the package resolves itself by name.
  mkdirSync(join(ROOT, '.tmp'), { recursive: true });
  const dir = mkdtempSync(join(ROOT, '.tmp', 'readme-first-handler-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('imports the toolkit from the front door only', () => {
    // Prepare
    const code = firstHandlerBlock();

    // Act
    const specifiers = [...code.matchAll(/from '([^']+)'/g)].map((match) => match[1]);

    // Assess
    expect(specifiers).toContain('sqs-inbox-worker');
    expect(specifiers.filter((specifier) => specifier?.startsWith('.'))).toEqual([]);
  });

  it('type-checks against the public entry point with the project compiler options', () => {
    // Prepare
    const code = firstHandlerBlock();
    const file = join(dir, 'first-handler.ts');
    writeFileSync(file, `${code}\n`);

    // Act
    const problems = typeCheck(file);

    // Assess
    expect(problems).toEqual([]);
  });

  it('reports a handler that no longer matches the API (the check can fail)', () => {
    // Prepare: the same block with a misspelt option.
    const code = firstHandlerBlock();
    const file = join(dir, 'broken-handler.ts');
    writeFileSync(
      file,
      `${code.replace('createWorkerFromConfig({ handlers })', 'createWorkerFromConfig({ handler: handlers })')}\n`,
    );

    // Act
    const problems = typeCheck(file);

    // Assess
    expect(problems.join('\n')).toMatch(/handler/);
  });
});

describe('Document: README.md, first handler, is the code the tests run', () => {
  it('is the fixture file that the local loader and the workerEntry synth test use, byte for byte', () => {
    // Prepare
    const fixture = readFileSync(join(ROOT, 'test/fixtures/first-handler/invoice-worker.ts'), 'utf8');

    // Act
    const readme = firstHandlerBlock();
    const manual = codeBlock('docs/writing-handlers.md', '## A complete worker');

    // Assess
    expect(`${readme}\n`).toBe(fixture);
    expect(`${manual}\n`).toBe(fixture);
  });

  it("passes the project's own biome check, and the check can fail", () => {
    // Prepare: outside the repository (its .tmp/ is ignored by biome), checked with the project's biome.json.
    const dir = mkdtempSync(join(tmpdir(), 'readme-biome-'));
    writeFileSync(join(dir, 'first-handler.ts'), `${firstHandlerBlock()}\n`);
    writeFileSync(join(dir, 'unformatted.ts'), `${firstHandlerBlock().replace('* as z', '* as   z')}\n`);
    const check = (file: string) =>
      spawnSync(
        process.execPath,
        [
          join(ROOT, 'node_modules/@biomejs/biome/bin/biome'),
          'check',
          `--config-path=${join(ROOT, 'biome.json')}`,
          file,
        ],
        { cwd: dir, encoding: 'utf8' },
      );

    // Act
    const sample = check('first-handler.ts');
    const broken = check('unformatted.ts');
    rmSync(dir, { recursive: true, force: true });

    // Assess
    expect(sample.stdout + sample.stderr).toContain('Checked 1 file');
    expect(sample.status, sample.stdout + sample.stderr).toBe(0);
    expect(broken.status).not.toBe(0);
  });

  it('honours SQS_ENDPOINT for local retries and uses the consumer the CLI defaults to', () => {
    // createWorkerFromConfig reads both from the environment, like the shipped worker; no hard-coded client or
    // consumer in the sample overrides them.
    const code = firstHandlerBlock();
    expect(code).toContain('createWorkerFromConfig({ handlers })');
    expect(code).not.toMatch(/new SQSClient|consumer:/);
  });
});

describe('Document: docs/writing-handlers.md, a complete worker', () => {
  mkdirSync(join(ROOT, '.tmp'), { recursive: true });
  const dir = mkdtempSync(join(ROOT, '.tmp', 'complete-worker-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('type-checks against the public entry point with the project compiler options', () => {
    // Prepare
    const file = join(dir, 'complete-worker.ts');
    writeFileSync(file, `${codeBlock('docs/writing-handlers.md', '## A complete worker')}\n`);

    // Act
    const problems = typeCheck(file);

    // Assess
    expect(problems).toEqual([]);
  });
});

describe('Document: docs/external-effects.md, on the DynamoDB store', () => {
  mkdirSync(join(ROOT, '.tmp'), { recursive: true });
  const dir = mkdtempSync(join(ROOT, '.tmp', 'dynamo-effect-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('type-checks the DynamoDB handler that sends its effect through the log, against the public entries', () => {
    // Prepare
    const file = join(dir, 'dynamo-effect.ts');
    writeFileSync(file, `${codeBlock('docs/external-effects.md', '## On the DynamoDB store')}\n`);

    // Act
    const problems = typeCheck(file);

    // Assess
    expect(problems).toEqual([]);
  });
});

describe('Document: docs/writing-handlers.md, retrying after a delay', () => {
  mkdirSync(join(ROOT, '.tmp'), { recursive: true });
  const dir = mkdtempSync(join(ROOT, '.tmp', 'retry-after-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('type-checks the handler that passes a Retry-After to RetryableError, against the public entry point', () => {
    // Prepare
    const file = join(dir, 'retry-after.ts');
    const heading = '## Retrying after a delay: `RetryableError` with `retryAfterSeconds`';
    writeFileSync(file, `${codeBlock('docs/writing-handlers.md', heading)}\n`);

    // Act
    const problems = typeCheck(file);

    // Assess
    expect(problems).toEqual([]);
  });
});
