import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const PACKAGE = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
  name: string;
  exports: Record<string, string | Record<'@sqs-inbox-worker/source' | 'types' | 'default', string>>;
};

/**
 * The public surface, subpath by subpath: every name each entry exports (values and types). A change here is a change
 * of the package's API; make it on purpose, and say it in the docs that show the entry (README, docs/*.md).
 */
const SURFACE: Readonly<Record<string, readonly string[]>> = {
  '.': [
    'AttemptPolicy',
    'CANARY_MESSAGE_TYPE',
    'CANARY_SCHEMA_VERSION',
    'ConfigError',
    'defineHandler',
    'Envelope',
    'FAILURE_CODES',
    'FailureCode',
    'HandlerContext',
    'HandlerResult',
    'HandlerTimeoutError',
    'MAX_PAYLOAD_DEPTH',
    'MessageHandler',
    'OutcomeResult',
    'PayloadRef',
    'RecordOutcome',
    'ReferencedDocument',
    'RetryableError',
    'TerminalError',
    'TransactionClosedError',
    'WorkerError',
    'parseRetryAfter',
  ],
  './postgres': [
    'COMMIT_MODES',
    'CommitMode',
    'DEFAULT_ROLE_TIMEOUTS',
    'DatabaseConfig',
    'DatabaseRoles',
    'MigrateDatabaseOptions',
    'MigrateResult',
    'MigrationFile',
    'RoleTimeouts',
    'WorkerFromConfigOptions',
    'canaryHandler',
    'createSql',
    'createWorkerFromConfig',
    'migrateDatabase',
  ],
  './dynamodb': [
    'ConditionFailedRule',
    'DYNAMO_OUTBOX_MAX_ENVELOPE_BYTES',
    'DynamoHandlerContext',
    'DynamoHandlerResult',
    'DynamoMessageHandler',
    'DynamoOutboxWrite',
    'DynamoStore',
    'DynamoStoreOptions',
    'DynamoTransactItem',
    'DynamoTransactionTooLargeError',
    'DynamoWorkerFromConfigOptions',
    'DynamoWrite',
    'MAX_DOMAIN_WRITES',
    'PerformDynamoExternalEffectOptions',
    'canaryDynamoHandler',
    'createDynamoStore',
    'createDynamoWorkerFromConfig',
    'defineDynamoHandler',
    'dynamoOutboxWrite',
    'performDynamoExternalEffect',
  ],
  './poller': [
    'Poller',
    'PollerConfig',
    'PollerFromConfigOptions',
    'PollerProcess',
    'PollerProcessConfig',
    'PollerStopResult',
    'StopOnSignalsOptions',
    'loadPollerConfig',
    'startPollerFromConfig',
    'stopOnSignals',
  ],
  './runtime': [
    'BackoffSettings',
    'BatchBudget',
    'BatchEngine',
    'BatchResult',
    'CodeRetryPolicy',
    'DEFAULT_METRICS_NAMESPACE',
    'METRIC_NAMES',
    'MetricName',
    'RecordTracer',
    'RecordTracerSource',
    'RetryPolicy',
    'S3ClientSource',
    'SqsClientSource',
    'TERMINAL_POLICIES',
    'TerminalPolicy',
    'WORKER_DEFAULTS',
    'WorkerConfig',
    'WorkerHandler',
    'WorkerOptions',
    'createBatchEngine',
    'createWorker',
    'loadConfig',
    'newRecordTracer',
  ],
  './outbox': [
    'EnqueueOutboxOptions',
    'EnqueueOutboxResult',
    'InvalidOutboxEnvelopeError',
    'OutboxConflictError',
    'OutboxError',
    'OutboxOffloadError',
    'OutboxRelayConfig',
    'OutboxUsageError',
    'PayloadOffloadTarget',
    'enqueueOutbox',
    'offloadPayload',
  ],
  './effects': [
    'ExternalEffectResult',
    'HttpNotificationProviderOptions',
    'NotificationProvider',
    'NotificationRequest',
    'PerformExternalEffectOptions',
    'effectKey',
    'httpNotificationProvider',
    'performExternalEffect',
  ],
  './cdk': [
    'CapacityInputs',
    'CapacityResult',
    'CapacityTerm',
    'DYNAMODB_CAPACITY_DEFAULTS',
    'DynamoDbCapacityInputs',
    'DynamoDbCapacityResult',
    'DynamoDbStoreProps',
    'EXAMPLE_DOMAIN_KEY_PREFIXES',
    'FargateRuntimeProps',
    'FargateRuntimeSettings',
    'INVOKES_PER_POLLER',
    'LambdaRuntimeProps',
    'OPS_TABLE_ACTIONS',
    'PollerService',
    'PollerServiceProps',
    'PollerSettings',
    'PostgresStoreProps',
    'ProvisionedPollers',
    'RESERVED_KEY_PREFIXES',
    'ResolvedWorkerSettings',
    'RetryPolicyEntry',
    'ScalingMode',
    'ScheduledJobs',
    'ScheduledJobsProps',
    'SqsDatabaseWorker',
    'SqsDatabaseWorkerProps',
    'SqsInboxWorkerStack',
    'SqsInboxWorkerStackProps',
    'WORKER_ITEM_ACTIONS',
    'WORKER_METRICS',
    'WORKER_TABLE_ACTIONS',
    'WorkerDatabase',
    'WorkerDatabaseProps',
    'WorkerNetwork',
    'WorkerNetworkProps',
    'WorkerOutcomeMetric',
    'WorkerRuntime',
    'WorkerSettings',
    'WorkerSettingsError',
    'WorkerStore',
    'WorkerTable',
    'WorkerTableProps',
    'safeDynamoDbConcurrency',
    'safeWorkerConcurrency',
    'stackEnvironment',
    'stageSettings',
  ],
};

/** The names of the engine (`lambda/worker/`) that are public, and the entry that gives each. */
const ENGINE_NAMES: Readonly<Record<string, readonly string[]>> = {
  '.': [
    'AttemptPolicy',
    'Envelope',
    'MAX_PAYLOAD_DEPTH',
    'OutcomeResult',
    'PayloadRef',
    'RecordOutcome',
    'ReferencedDocument',
  ],
  './runtime': [
    'BackoffSettings',
    'BatchBudget',
    'BatchEngine',
    'BatchResult',
    'CodeRetryPolicy',
    'RetryPolicy',
  ],
};

/** The TypeScript source of a subpath: its target under the source condition (lib/source-condition.ts). */
const entryFile = (subpath: string) => {
  const target = PACKAGE.exports[subpath];
  return typeof target === 'string' ? target : (target?.['@sqs-inbox-worker/source'] ?? '');
};

/** Each entry's exports as TypeScript sees them: name → the file (under ROOT) that declares it. */
function readSurface(): Map<string, Map<string, string>> {
  const subpaths = Object.keys(PACKAGE.exports).filter((subpath) => subpath !== './package.json');
  const files = subpaths.map((subpath) => join(ROOT, entryFile(subpath)));
  const program = ts.createProgram(files, {
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    target: ts.ScriptTarget.ES2022,
    allowImportingTsExtensions: true,
    noEmit: true,
    skipLibCheck: true,
    types: ['node'],
  });
  const checker = program.getTypeChecker();
  return new Map(
    subpaths.map((subpath, index) => {
      const source = program.getSourceFile(files[index] as string);
      const module = source && checker.getSymbolAtLocation(source);
      if (!module) throw new Error(`TypeScript could not read the entry ${entryFile(subpath)}`);
      const names = checker.getExportsOfModule(module).map((symbol) => {
        const declared = symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol;
        const file = declared.declarations?.[0]?.getSourceFile().fileName ?? '';
        return [symbol.getName(), relative(ROOT, file).split('\\').join('/')] as const;
      });
      return [subpath, new Map(names)];
    }),
  );
}

const surface = readSurface();
const sorted = (names: Iterable<string>) => [...names].sort((a, b) => a.localeCompare(b, 'en'));

describe('The public surface (package.json exports)', () => {
  it('declares exactly the listed subpaths, each an index.ts with its compiled module and declaration', () => {
    expect(Object.keys(PACKAGE.exports).sort()).toEqual([...Object.keys(SURFACE), './package.json'].sort());
    for (const subpath of Object.keys(SURFACE)) {
      const target = PACKAGE.exports[subpath];
      const source = entryFile(subpath);
      expect(source, subpath).toMatch(/^\.\/(lambda|lib)\/(.+\/)?index\.ts$/);
      // The source condition first (a tool that knows it stops there), then the declaration, then the module.
      expect(typeof target === 'object' && Object.keys(target), subpath).toEqual([
        '@sqs-inbox-worker/source',
        'types',
        'default',
      ]);
      const compiled = source.replace(/^\.\//, './dist/').replace(/\.ts$/, '');
      expect(typeof target === 'object' && [target.types, target.default], subpath).toEqual([
        `${compiled}.d.ts`,
        `${compiled}.js`,
      ]);
    }
  });

  it.each(Object.keys(SURFACE))('exports from %s exactly the listed names', (subpath) => {
    expect(sorted(surface.get(subpath)?.keys() ?? [])).toEqual(sorted(SURFACE[subpath] ?? []));
  });

  it("keeps the root, the handler author's entry, at 30 names at most", () => {
    expect(surface.get('.')?.size).toBeLessThanOrEqual(30);
  });

  it('gives each name from one entry only', () => {
    const owners = new Map<string, string[]>();
    for (const [subpath, names] of surface) {
      for (const name of names.keys()) owners.set(name, [...(owners.get(name) ?? []), subpath]);
    }
    expect([...owners].filter(([, subpaths]) => subpaths.length > 1)).toEqual([]);
  });

  it('gives of the engine (lambda/worker/) only its public names, each from one entry', () => {
    const engineNames = Object.fromEntries(
      [...surface]
        .map(([subpath, names]) => [
          subpath,
          sorted([...names].filter(([, file]) => file.startsWith('lambda/worker/')).map(([name]) => name)),
        ])
        .filter(([, names]) => names.length > 0),
    );
    expect(engineNames).toEqual(ENGINE_NAMES);
  });

  it('resolves every subpath by the package name, and no module behind them (the engine included)', () => {
    // Prepare: a module inside the package resolves the package by its own name (Node's self-reference), as the
    // project's code, its docs' examples and a user's code do — with the source condition, as tsx runs them here
    // (package.json scripts).
    const specifiers = [
      ...Object.keys(SURFACE).map((subpath) =>
        subpath === '.' ? PACKAGE.name : `${PACKAGE.name}/${subpath.slice(2)}`,
      ),
      `${PACKAGE.name}/lambda/worker/batch-engine.ts`,
      `${PACKAGE.name}/lambda/worker/batch-engine`,
      `${PACKAGE.name}/worker`,
      `${PACKAGE.name}/lambda/index.ts`,
      `${PACKAGE.name}/stores/postgres/postgres-store.ts`,
    ];
    const script = `
      const out = {};
      for (const specifier of ${JSON.stringify(specifiers)}) {
        try { out[specifier] = import.meta.resolve(specifier); } catch (error) { out[specifier] = error.code; }
      }
      process.stdout.write(JSON.stringify(out));`;

    // Act
    const run = spawnSync(
      process.execPath,
      ['--conditions=@sqs-inbox-worker/source', '--input-type=module', '-e', script],
      {
        cwd: ROOT,
        encoding: 'utf8',
      },
    );
    const resolved = JSON.parse(run.stdout || '{}') as Record<string, string>;

    // Assess: each subpath to its declared file; every other path refused as not exported.
    expect(run.status, run.stderr).toBe(0);
    for (const subpath of Object.keys(SURFACE)) {
      const specifier = subpath === '.' ? PACKAGE.name : `${PACKAGE.name}/${subpath.slice(2)}`;
      expect(resolved[specifier], specifier).toBe(
        new URL(entryFile(subpath), `file://${ROOT.endsWith('/') ? ROOT : `${ROOT}/`}`).href,
      );
    }
    for (const specifier of specifiers.slice(Object.keys(SURFACE).length)) {
      expect(resolved[specifier], specifier).toBe('ERR_PACKAGE_PATH_NOT_EXPORTED');
    }
  });
});
