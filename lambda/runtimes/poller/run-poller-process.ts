import { ConfigError } from '../../errors.ts';
import { type PollerFromConfigOptions, startPollerFromConfig } from './start-poller-from-config.ts';
import { stopOnSignals } from './stop-on-signals.ts';

type Handlers = PollerFromConfigOptions['handlers'];

/**
 * The whole of a poller container's main: `loadHandlers()`, `startPollerFromConfig` over them, then `stopOnSignals`
 * (a drain on SIGTERM within `POLLER_STOP_TIMEOUT_SECONDS`). The handlers are loaded inside, so that a bad variable
 * read at a module's top level (`createWorkerFromConfig` in a worker entry) ends like one read by the poller: one
 * line naming it (`poller not started: …`) and exit 2, and the container does not restart-loop silently.
 * `bin/poller.ts` (the example domain) and the main `SqsDatabaseWorker` bundles around a `workerEntry` on Fargate
 * both run it; `source` names the module of the handlers in that line.
 *
 * @internal
 */
export async function runPollerProcess(
  loadHandlers: () => Promise<Handlers>,
  source = 'the poller main',
): Promise<void> {
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
  const notStarted = (error: unknown): never => {
    if (!(error instanceof ConfigError)) throw error;
    process.stderr.write(`poller not started: ${error.message}\n`);
    process.exit(2);
  };
  const handlers = await loadHandlers().catch(notStarted);
  if (typeof handlers !== 'function' && (!Array.isArray(handlers) || handlers.length === 0)) {
    notStarted(
      new ConfigError(
        `${source} has no \`handlers\` to run (given ${Array.isArray(handlers) ? 'an empty list' : typeof handlers}): export your handlers from it (\`export const handlers = [myHandler];\`, next to its \`handler\`)`,
      ),
    );
  }
  const running = await startPollerFromConfig({ handlers }).catch(notStarted);
  stopOnSignals({
    poller: running.poller,
    stopTimeoutMs: running.config.poller.stopTimeoutSeconds * 1000,
    close: running.close,
    exit: (code) => process.exit(code),
    logger: running.logger,
  });
}
