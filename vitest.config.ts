import { defaultServerConditions } from 'vite';
import { defineConfig } from 'vitest/config';

// The package imported by its own name resolves to its TypeScript sources, as relative imports do
// (lib/source-condition.ts), not to the compiled dist/ that `npm run build` writes. Without `module`: the
// dependencies run in Node, and `module` would pick their bundler builds (the AWS SDK's extensionless dist-es).
const conditions = [
  '@sqs-inbox-worker/source',
  ...defaultServerConditions.filter((name) => name !== 'module'),
];

export default defineConfig({
  resolve: { conditions },
  ssr: { resolve: { conditions } },
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/support/global-setup.ts'],
    env: {
      // The entries a test runs in a child process (`node --import tsx bin/local.ts`, a fixture importing
      // 'sqs-inbox-worker') resolve the package's own name to its sources too, as `npm start` does with its flag.
      NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --conditions=@sqs-inbox-worker/source`.trim(),
      AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
      AWS_REGION: 'us-east-1',
      AWS_ACCESS_KEY_ID: 'local',
      AWS_SECRET_ACCESS_KEY: 'local',
      POWERTOOLS_METRICS_NAMESPACE: 'SqsInboxWorkerTest',
      POWERTOOLS_SERVICE_NAME: 'sqs-inbox-worker-test',
      // Telemetry is asserted where it matters (test/integration/observability.test.ts); elsewhere it is noise.
      POWERTOOLS_METRICS_DISABLED: 'true',
      POWERTOOLS_LOG_LEVEL: 'SILENT',
    },
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: 'forks',
    maxWorkers: 2,
  },
});
