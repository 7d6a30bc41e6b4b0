import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { afterAll, describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const HEADING = '## A first handler';

/** The first ```ts block after {@link HEADING} in README.md. */
function firstHandlerBlock(readme: string): string {
  const section = readme.indexOf(`\n${HEADING}\n`);
  if (section < 0) throw new Error(`README.md has no "${HEADING}" section`);
  const match = /```ts\n([\s\S]*?)\n```/.exec(readme.slice(section));
  if (!match?.[1]) throw new Error(`the "${HEADING}" section of README.md has no \`\`\`ts block`);
  return match[1];
}

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
    const code = firstHandlerBlock(readFileSync(join(ROOT, 'README.md'), 'utf8'));

    // Act
    const specifiers = [...code.matchAll(/from '([^']+)'/g)].map((match) => match[1]);

    // Assess
    expect(specifiers).toContain('sqs-inbox-worker');
    expect(specifiers.filter((specifier) => specifier?.startsWith('.'))).toEqual([]);
  });

  it('type-checks against the public entry point with the project compiler options', () => {
    // Prepare
    const code = firstHandlerBlock(readFileSync(join(ROOT, 'README.md'), 'utf8'));
    const file = join(dir, 'first-handler.ts');
    writeFileSync(file, `${code}\n`);

    // Act
    const problems = typeCheck(file);

    // Assess
    expect(problems).toEqual([]);
  });

  it('reports a handler that no longer matches the API (the check can fail)', () => {
    // Prepare: the same block with a misspelt option.
    const code = firstHandlerBlock(readFileSync(join(ROOT, 'README.md'), 'utf8'));
    const file = join(dir, 'broken-handler.ts');
    writeFileSync(file, `${code.replace('handlers:', 'handler:')}\n`);

    // Act
    const problems = typeCheck(file);

    // Assess
    expect(problems.join('\n')).toMatch(/handler/);
  });
});
