import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { capacityStore } from '../../../../tools/ops/capacity-store.ts';
import { UsageError } from '../../../../tools/ops/errors.ts';
import { createMemoryOutput } from '../../../../tools/ops/memory-output.ts';
import { dynamoDbCapacity } from '../../../../tools/ops/stores/dynamodb/dynamodb-capacity.ts';

const CLI = fileURLToPath(new URL('../../../../bin/sqs-worker.js', import.meta.url));

/** Runs the real CLI entry as a subprocess; `capacity` needs no database, queue or table. */
function runCli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [CLI, ...args],
      { env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '' }, timeout: 60_000 },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
        resolve({ code, stdout, stderr });
      },
    );
  });
}

describe('Function: dynamoDbCapacity()', () => {
  it('shows the write units per message and per worker and the binding term', () => {
    // Prepare
    const out = createMemoryOutput();

    // Act: 3 items → 7 WCU per message; 2 records at 20 ms → 100 messages/s, 700 WCU/s per worker
    const result = dynamoDbCapacity(
      { out },
      {
        maxWriteUnitsPerSecond: 20_000,
        transactItemsPerMessage: 3,
        recordConcurrency: 2,
        recordLatencyMs: 20,
      },
    );

    // Assess
    expect(result).toMatchObject({ safeConcurrency: 28, binding: 'write_units', writeUnitsPerMessage: 7 });
    expect(out.stdout()).toContain('Write units per message: 7');
    expect(out.stdout()).toContain('One worker: 100 messages/s, 700 write units/s.');
    expect(out.stdout()).toContain('Safe worker concurrency: 28 (binding: write_units)');
  });

  it('says when the budget cannot carry the event source minimum, and names flags in input errors', () => {
    // Prepare
    const out = createMemoryOutput();

    // Act
    dynamoDbCapacity({ out }, { maxWriteUnitsPerSecond: 300 });
    const bad = () => dynamoDbCapacity({ out: createMemoryOutput() }, { transactItemsPerMessage: 200 });

    // Assess
    expect(out.stdout()).toContain(
      'Below the event source minimum of 2: the construct refuses this at synth',
    );
    expect(bad).toThrow(UsageError);
    expect(bad).toThrow('--transact-items-per-message must be a whole number from 1 to 100');
  });
});

describe('Function: capacityStore()', () => {
  it('refuses an unknown store, a flag of the other store, and PostgreSQL without its connections', () => {
    expect(capacityStore('dynamodb', ['--store', '--record-latency-ms'])).toBe('dynamodb');
    expect(() => capacityStore('oracle', [])).toThrow('--store (oracle) must be postgres or dynamodb');
    expect(() => capacityStore('dynamodb', ['--db-max-connections', '--db-write-iops-budget'])).toThrow(
      '--db-max-connections, --db-write-iops-budget apply only to --store postgres (given --store dynamodb); remove them or set --store postgres',
    );
    expect(() => capacityStore('postgres', ['--db-max-connections', '--item-size-kb'])).toThrow(
      '--item-size-kb applies only to --store dynamodb (given --store postgres)',
    );
    expect(() => capacityStore('postgres', [])).toThrow(
      '--db-max-connections is required with --store postgres',
    );
  });
});

describe('Command: sqs-worker capacity --store dynamodb', () => {
  it('prints the DynamoDB derivation as JSON with exit 0, and refuses a PostgreSQL flag with exit 2', async () => {
    // Act
    const ok = await runCli([
      'capacity',
      '--store',
      'dynamodb',
      '--max-write-units-per-second',
      '4000',
      '--record-latency-ms',
      '20',
      '--json',
    ]);
    const refused = await runCli(['capacity', '--store', 'dynamodb', '--db-max-connections', '90']);
    const postgres = await runCli(['capacity', '--db-max-connections', '90', '--json']);

    // Assess
    expect(ok.code).toBe(0);
    expect(JSON.parse(ok.stdout)).toMatchObject({
      safeConcurrency: 16,
      binding: 'write_units',
      writeUnitsPerMessage: 5,
      messagesPerSecondPerWorker: 50,
    });
    expect(refused.code).toBe(2);
    expect(refused.stderr + refused.stdout).toContain(
      '--db-max-connections applies only to --store postgres',
    );
    expect(postgres.code).toBe(0);
    expect(JSON.parse(postgres.stdout)).toMatchObject({ safeConcurrency: 80, binding: 'db_connections' });
  });
});
