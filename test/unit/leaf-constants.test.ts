import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { App } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import { BREAKER_METRICS } from '../../lambda/breaker/run-breaker.ts';
import { loadConfig } from '../../lambda/config.ts';
import { DEFAULT_METRICS_NAMESPACE, METRIC_NAMES, WORKER_DEFAULTS } from '../../lambda/constants.ts';
import { DYNAMODB_FAILURE_CODES, FAILURE_CODES } from '../../lambda/failure-codes.ts';
import { HEALTH_METRICS } from '../../lambda/health/health-metrics.ts';
import { DUPLICATE_METRICS, LOAD_METRICS, OUTCOME_METRICS } from '../../lambda/worker/record-telemetry.ts';
import { SqsInboxWorkerStack } from '../../lib/sqs-inbox-worker-stack.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** Every TypeScript file under `dir` (relative to the project), with its comment lines removed. */
function sources(dir: string): { file: string; code: string }[] {
  return readdirSync(join(ROOT, dir), { recursive: true, encoding: 'utf8' })
    .filter((name) => name.endsWith('.ts'))
    .map((name) => {
      const file = join(ROOT, dir, name);
      const code = readFileSync(file, 'utf8')
        .split('\n')
        .filter((line) => !/^\s*(\*|\/\*\*|\/\/)/.test(line))
        .join('\n');
      return { file: relative(ROOT, file), code };
    });
}

describe('Leaf module: METRIC_NAMES — the names the code emits are the names the alarms and dashboard watch', () => {
  const lambda = sources('lambda');
  // The health job names its metrics from HEALTH_METRICS through two small helpers (lambda/health/).
  const HEALTH_PUBLISHER = 'lambda/health/publish-health.ts';
  const calls = lambda
    .filter(({ file }) => file !== HEALTH_PUBLISHER)
    .flatMap(({ file, code }) =>
      [...code.matchAll(/addMetric\(\s*([^,:]+),/g)].map((match) => ({
        file,
        name: match[1].trim(),
      })),
    );

  /** The metric names the code emits: every addMetric call names METRIC_NAMES.x or an OUTCOME_METRICS entry. */
  const emitted = new Set(
    calls.flatMap(({ name }) => {
      const key = /^METRIC_NAMES\.(\w+)$/.exec(name)?.[1];
      if (key) return [METRIC_NAMES[key as keyof typeof METRIC_NAMES]];
      if (name.startsWith('OUTCOME_METRICS[')) return Object.values(OUTCOME_METRICS);
      if (name.startsWith('BREAKER_METRICS[')) return Object.values(BREAKER_METRICS);
      if (name.startsWith('LOAD_METRICS[')) return Object.values(LOAD_METRICS);
      if (name.startsWith('DUPLICATE_METRICS[')) return Object.values(DUPLICATE_METRICS);
      return [];
    }),
  );
  /** What the health job publishes: every HEALTH_METRICS name its publisher passes on. */
  const healthCode = lambda.find(({ file }) => file === HEALTH_PUBLISHER)?.code ?? '';
  const healthEmitted = Object.entries(HEALTH_METRICS)
    .filter(([key]) => healthCode.includes(`M.${key}`))
    .map(([, name]) => name);

  it('publishes every health metric it names', () => {
    expect(healthEmitted.sort()).toEqual(Object.values(HEALTH_METRICS).sort());
  });

  it('names every metric through METRIC_NAMES, never a string literal', () => {
    // Assess
    expect(calls.length).toBeGreaterThan(10);
    expect(
      calls.filter(
        ({ name }) =>
          !/^(METRIC_NAMES\.\w+|OUTCOME_METRICS\[|BREAKER_METRICS\[|LOAD_METRICS\[|DUPLICATE_METRICS\[)/.test(
            name,
          ),
      ),
    ).toEqual([]);
    expect(
      Object.values(OUTCOME_METRICS).every((name) =>
        (Object.values(METRIC_NAMES) as string[]).includes(name),
      ),
    ).toBe(true);
  });

  it('emits every name of METRIC_NAMES somewhere (HandlerReruns included)', () => {
    // Assess
    expect([...emitted].sort()).toEqual(Object.values(METRIC_NAMES).sort());
  });

  it('watches, in the alarms and the dashboard, only metrics of its namespace that the code emits', () => {
    // Prepare
    const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
    const stack = new SqsInboxWorkerStack(app, 'Metrics', { worker: { production: false, alarms: 'none' } });
    const template = Template.fromStack(stack);

    // Act: every metric of the worker's namespace the alarms (plain and metric math) and the dashboard read.
    const watched = new Set<string>();
    for (const alarm of Object.values(template.findResources('AWS::CloudWatch::Alarm'))) {
      const props = alarm.Properties as {
        Namespace?: string;
        MetricName?: string;
        Metrics?: { MetricStat?: { Metric: { Namespace: string; MetricName: string } } }[];
      };
      if (props.Namespace === DEFAULT_METRICS_NAMESPACE && props.MetricName) watched.add(props.MetricName);
      for (const query of props.Metrics ?? []) {
        const metric = query.MetricStat?.Metric;
        if (metric?.Namespace === DEFAULT_METRICS_NAMESPACE) watched.add(metric.MetricName);
      }
    }
    const dashboards = Object.values(template.findResources('AWS::CloudWatch::Dashboard'));
    const body = JSON.stringify(dashboards.map((d) => d.Properties.DashboardBody));
    for (const match of body.matchAll(
      new RegExp(`${DEFAULT_METRICS_NAMESPACE}\\\\",\\\\"(\\w+)\\\\"`, 'g'),
    )) {
      watched.add(match[1]);
    }

    // Assess
    expect(watched.size).toBeGreaterThan(8);
    expect(
      [...watched].filter((name) => !emitted.has(name) && !(healthEmitted as string[]).includes(name)),
    ).toEqual([]);
    for (const name of [
      'HashMismatch',
      'TerminalFailure',
      'BatchSize',
      'OutboxOldestPendingAgeMs',
      'HandlerReruns',
    ]) {
      expect(watched, name).toContain(name);
    }
  });
});

describe('Leaf module: FAILURE_CODES — every code the engine, the stores, the effect log and the examples emit', () => {
  // Every source folder under lambda/: a code added anywhere (a store, a runtime, a job) must be listed.
  const code = sources('lambda')
    .map((source) => source.code)
    .join('\n');
  const patterns = [
    /(?:TerminalError|RetryableError)\(\s*'([A-Z][A-Z0-9_]+)'/g,
    /super\(\s*'([A-Z][A-Z0-9_]+)'/g,
    /\b(?:code|failureCode)(?:\s*=|:)\s*'([A-Z][A-Z0-9_]+)'/g,
    /\?\? '([A-Z][A-Z0-9_]+)'\)?;/g,
    /'[0-9A-Z]{5}': '([A-Z][A-Z0-9_]+)'/g,
    /code: '(CONNECT_TIMEOUT)' \| '(CONNECTION_CLOSED)'/g,
    /\? 'NETWORK_ERROR' : '(UNHANDLED_ERROR)'|'(NETWORK_ERROR)' :/g,
    // A table from an AWS reason to a code (the DynamoDB store's cancellation reasons); not an API parameter's
    // value (ReturnValues: 'ALL_OLD', ProjectionExpression: 'PK').
    /^\s+(?!ReturnValues|ProjectionExpression)[A-Z]\w+: '([A-Z][A-Z0-9_]+)',$/gm,
  ];
  const found = new Set(
    patterns.flatMap((pattern) => [...code.matchAll(pattern)].flatMap((m) => m.slice(1).filter(Boolean))),
  );

  it('lists every code the sources emit', () => {
    // Assess: what the scan finds (it can fail: the engine's newest codes must be among them)
    for (const name of [
      'HANDLER_TIMEOUT',
      'TRANSACTION_CLOSED',
      'RECORD_UNSETTLED',
      'INVALID_STAGE',
      'LOCK_TIMEOUT',
      // The DynamoDB store's (lambda/stores/dynamodb/), one of them from its table of cancellation reasons.
      'LEASE_LOST',
      'THROTTLED',
      'ITEM_COLLECTION_SIZE_LIMIT',
      'DYNAMODB_TOO_MANY_WRITES',
    ]) {
      expect(found, name).toContain(name);
    }
    expect([...found].filter((name) => !(FAILURE_CODES as readonly string[]).includes(name))).toEqual([]);
  });

  it('names every code of the DynamoDB store in docs/dynamodb.md', () => {
    const page = readFileSync(join(ROOT, 'docs/dynamodb.md'), 'utf8');
    expect(DYNAMODB_FAILURE_CODES.filter((name) => !page.includes(`\`${name}\``))).toEqual([]);
  });

  it('lists no code that the sources no longer mention', () => {
    const all = [...sources('lambda')].map((source) => source.code).join('\n');
    expect(FAILURE_CODES.filter((name) => !all.replace(/failure-codes/g, '').includes(`'${name}'`))).toEqual(
      [],
    );
  });
});

describe('Leaf module: WORKER_DEFAULTS — one set of defaults for createWorker, loadConfig and the docs', () => {
  it('is what loadConfig returns for an environment that sets nothing', () => {
    // Act
    const config = loadConfig({ DATABASE_URL: 'postgres://worker@127.0.0.1:5432/cases' });

    // Assess
    expect(config).toMatchObject({
      consumer: WORKER_DEFAULTS.consumer,
      database: { poolSize: WORKER_DEFAULTS.poolSize },
      terminalPolicy: WORKER_DEFAULTS.terminalPolicy,
      commitMode: WORKER_DEFAULTS.commitMode,
      backoffBaseSeconds: WORKER_DEFAULTS.backoffBaseSeconds,
      backoffMaxSeconds: WORKER_DEFAULTS.backoffMaxSeconds,
      maxBusinessAttempts: WORKER_DEFAULTS.maxBusinessAttempts,
      failInvocationOnFullBatchFailure: WORKER_DEFAULTS.failInvocationOnFullBatchFailure,
    });
  });

  it('is what the createWorker table of docs/writing-handlers.md and the variables of docs/configuration.md show', () => {
    // Prepare
    const handlersPage = readFileSync(join(ROOT, 'docs/writing-handlers.md'), 'utf8');
    const configurationPage = readFileSync(join(ROOT, 'docs/configuration.md'), 'utf8');
    /** The default cell of the row whose first cell is `name` in backticks. */
    const cell = (page: string, name: string, column: number) =>
      new RegExp(`^\\|\\s*\`${name}\`\\s*\\|([^\\n]*)$`, 'm').exec(page)?.[1]?.split('|')[column]?.trim();
    const d = WORKER_DEFAULTS;

    // Assess: createWorker options (second column).
    expect(cell(handlersPage, 'terminalPolicy', 0)).toBe(`\`${d.terminalPolicy}\``);
    expect(cell(handlersPage, 'commitMode', 0)).toBe(`\`${d.commitMode}\``);
    expect(cell(handlersPage, 'recordConcurrency', 0)).toBe(`\`${d.recordConcurrency}\``);
    expect(cell(handlersPage, 'backoff', 0)).toBe(
      `\`{ baseSeconds: ${d.backoffBaseSeconds}, maxSeconds: ${d.backoffMaxSeconds} }\``,
    );
    expect(cell(handlersPage, 'maxBusinessAttempts', 0)).toBe(`\`${d.maxBusinessAttempts}\``);
    expect(cell(handlersPage, 'deadlineGuardMs', 0)).toBe(
      `max(${d.minDeadlineGuardMs / 1000} s, observed p99), ≤ half the budget`,
    );
    expect(cell(handlersPage, 'failInvocationOnFullBatchFailure', 0)).toBe(
      `\`${d.failInvocationOnFullBatchFailure}\``,
    );
    // Variables (third column: after "read by").
    expect(cell(configurationPage, 'WORKER_CONSUMER', 1)).toBe(`\`${d.consumer}\``);
    expect(cell(configurationPage, 'DB_POOL_SIZE', 1)).toBe(`\`${d.poolSize}\``);
    expect(cell(configurationPage, 'WORKER_TERMINAL_POLICY', 1)).toBe(`\`${d.terminalPolicy}\``);
    expect(cell(configurationPage, 'WORKER_COMMIT_MODE', 1)).toBe(`\`${d.commitMode}\``);
    expect(cell(configurationPage, 'WORKER_BACKOFF_BASE_SECONDS', 1)).toBe(`\`${d.backoffBaseSeconds}\``);
    expect(cell(configurationPage, 'WORKER_BACKOFF_MAX_SECONDS', 1)).toBe(`\`${d.backoffMaxSeconds}\``);
    expect(cell(configurationPage, 'WORKER_MAX_BUSINESS_ATTEMPTS', 1)).toBe(`\`${d.maxBusinessAttempts}\``);
    expect(cell(configurationPage, 'WORKER_DEADLINE_GUARD_MS', 1)).toBe(
      `observed p99, ≥ ${d.minDeadlineGuardMs}, ≤ half the budget`,
    );
    expect(cell(configurationPage, 'WORKER_FAIL_INVOCATION_ON_FULL_FAILURE', 1)).toBe(
      `\`${d.failInvocationOnFullBatchFailure}\``,
    );
  });
});
