import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../lambda/config.ts';
import { MAX_WORKER_VERSION_LENGTH, UNVERSIONED, workerVersion } from '../../lambda/worker-version.ts';

describe('Function: workerVersion()', () => {
  it('takes WORKER_VERSION over the Lambda function version', () => {
    // Act
    const version = workerVersion({
      WORKER_VERSION: ' 3f9c2a1b7d4e ',
      AWS_LAMBDA_FUNCTION_NAME: 'case-worker',
      AWS_LAMBDA_FUNCTION_VERSION: '7',
    });

    // Assess
    expect(version).toBe('3f9c2a1b7d4e');
  });

  it("names the Lambda function and its version when WORKER_VERSION is unset, and 'unversioned' elsewhere", () => {
    // Act / Assess
    expect(workerVersion({ AWS_LAMBDA_FUNCTION_NAME: 'case-worker', AWS_LAMBDA_FUNCTION_VERSION: '7' })).toBe(
      'case-worker:7',
    );
    expect(workerVersion({ AWS_LAMBDA_FUNCTION_NAME: 'case-worker' })).toBe('case-worker:$LATEST');
    expect(workerVersion({ WORKER_VERSION: '  ' })).toBe(UNVERSIONED);
  });

  it('cuts a long version to the columns that keep it', () => {
    // Act
    const version = workerVersion({ WORKER_VERSION: 'v'.repeat(200) });

    // Assess
    expect(version).toHaveLength(MAX_WORKER_VERSION_LENGTH);
  });

  it('is what loadConfig reads', () => {
    // Act
    const config = loadConfig({ DATABASE_URL: 'postgres://u:p@127.0.0.1:5432/db', WORKER_VERSION: 'abc123' });

    // Assess
    expect(config.workerVersion).toBe('abc123');
  });
});
