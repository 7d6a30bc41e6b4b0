import { describe, expect, it } from 'vitest';
import { UsageError } from '../../../../tools/ops/errors.ts';
import { createMemoryOutput } from '../../../../tools/ops/memory-output.ts';
import { capacity } from '../../../../tools/ops/stores/postgres/capacity.ts';

describe('Function: capacity()', () => {
  it('computes the safe concurrency and names the binding constraint', () => {
    // Prepare
    const out = createMemoryOutput();

    // Act
    const result = capacity(
      { out },
      {
        dbMaxConnections: 100,
        dbReservedConnections: 20,
        dbWriteIopsBudget: 3000,
        writeIopsPerMessage: 50,
        downstreamRateLimit: 100,
        callsPerMessage: 4,
        lockContentionSafeParallelism: 40,
      },
    );

    // Assess
    expect(result).toMatchObject({
      dbAvailableConnections: 80,
      safeConcurrency: 25,
      binding: 'downstream_rate',
    });
    expect(result.terms.map((term) => term.term)).toEqual([
      'db_connections',
      'write_iops',
      'downstream_rate',
      'lock_contention',
    ]);
    expect(out.stdout()).toContain('Safe worker concurrency: 25 (binding: downstream_rate)');
  });

  it('rejects inputs that leave no connection or come without their pair', () => {
    // Act
    const reserved = () =>
      capacity({ out: createMemoryOutput() }, { dbMaxConnections: 10, dbReservedConnections: 10 });
    const unpaired = () =>
      capacity({ out: createMemoryOutput() }, { dbMaxConnections: 50, dbWriteIopsBudget: 100 });

    // Assess
    expect(reserved).toThrow(UsageError);
    expect(reserved).toThrow('--db-reserved-connections (10) must be below --db-max-connections (10)');
    expect(unpaired).toThrow('db-write-iops-budget and write-iops-per-message go together');
  });
});
