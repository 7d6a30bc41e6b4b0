import formBody from '@fastify/formbody';
import Fastify, { type FastifyInstance, type FastifyReply } from 'fastify';
import { OperationError, OpsError, UsageError } from '../ops/errors.ts';
import type { ConsoleContext } from './console-context.ts';
import { type ConsoleAddress, type GuardRefusal, installConsoleGuard } from './console-guard.ts';
import { errorBox, page } from './console-layout.ts';
import type { ConsoleSecrets } from './console-secrets.ts';
import { html, type SafeHtml } from './html.ts';
import { dlqPage } from './pages/dlq-page.ts';
import { groupsPage } from './pages/groups-page.ts';
import { logsPage } from './pages/logs-page.ts';
import { messagePage } from './pages/message-page.ts';
import { overviewPage } from './pages/overview-page.ts';
import { quarantinePage } from './pages/quarantine-page.ts';
import {
  cancelAction,
  cancelPreview,
  redriveAction,
  redrivePreview,
} from './pages/redrive-cancel-actions.ts';
import {
  releaseAction,
  releaseAllAction,
  releaseAllPreview,
  releasePreview,
} from './pages/release-actions.ts';
import type { Params } from './query-params.ts';

type Render = (ctx: ConsoleContext, params: Params) => Promise<SafeHtml>;

/** The pages: path, title, renderer. Each reads through the ops functions the CLI's commands call. */
const PAGES: ReadonlyArray<readonly [string, string, Render]> = [
  ['/', 'Overview', overviewPage],
  ['/groups', 'Failure groups', groupsPage],
  ['/quarantine', 'Quarantine', quarantinePage],
  ['/dlq', 'Dead-letter queue', dlqPage],
  ['/message', 'Message', messagePage],
  ['/logs', 'Log lines', logsPage],
];

/** The actions: path, title, the dry-run preview (GET), the action itself (POST, with --allow-actions only). */
const ACTIONS: ReadonlyArray<readonly [string, string, Render, Render]> = [
  ['/actions/release', 'Release a quarantine entry', releasePreview, releaseAction],
  ['/actions/release-all', 'Release quarantine entries', releaseAllPreview, releaseAllAction],
  ['/actions/redrive', 'Canary redrive from the DLQ', redrivePreview, redriveAction],
  ['/actions/cancel', 'Cancel an idempotency key', cancelPreview, cancelAction],
];

/**
 * The console's HTTP server (fastify, server-rendered pages, no script): the guards of {@link installConsoleGuard} on
 * every request, the pages and the actions' previews on GET, the actions on POST — refused (403) unless the console
 * was started with `--allow-actions`. A refusal or failure of an ops function is a page that tells it as the CLI does,
 * with 400 (usage), 409 (refused by a guard) or 500 (anything else).
 */
export async function createConsoleServer(
  ctx: ConsoleContext,
  secrets: ConsoleSecrets,
  address: () => ConsoleAddress,
): Promise<FastifyInstance> {
  const app = Fastify({ logger: false, bodyLimit: 64 * 1024 });
  await app.register(formBody);
  const refuse = (reply: FastifyReply, refusal: GuardRefusal) =>
    reply
      .code(refusal.status)
      .type('text/html; charset=utf-8')
      .send(page(ctx, 'Refused', '', html`<div class="error" role="alert">${refusal.message}</div>`));
  installConsoleGuard(app, secrets, address, refuse);
  const respond = async (
    reply: FastifyReply,
    title: string,
    path: string,
    render: () => Promise<SafeHtml>,
  ) => {
    try {
      const body = await render();
      return reply.type('text/html; charset=utf-8').send(page(ctx, title, path, body));
    } catch (error) {
      return reply
        .code(statusOf(error))
        .type('text/html; charset=utf-8')
        .send(page(ctx, title, path, errorBox(ctx, error)));
    }
  };
  for (const [path, title, render] of PAGES) {
    app.get(path, (request, reply) =>
      respond(reply, title, path, () => render(ctx, request.query as Params)),
    );
  }
  for (const [path, title, preview, act] of ACTIONS) {
    app.get(path, (request, reply) =>
      respond(reply, title, path, () => preview(ctx, request.query as Params)),
    );
    app.post(path, (request, reply) => {
      if (!ctx.options.allowActions) {
        return refuse(reply, {
          status: 403,
          message:
            'This console is read-only: start it with "sqs-worker console --allow-actions" to act from it.',
        });
      }
      return respond(reply, title, path, () => act(ctx, request.body as Params));
    });
  }
  app.setNotFoundHandler((request, reply) =>
    reply
      .code(404)
      .type('text/html; charset=utf-8')
      .send(
        page(
          ctx,
          'Not found',
          '',
          html`<div class="error">No page ${request.url.split('?')[0] ?? ''} here.</div>`,
        ),
      ),
  );
  return app;
}

function statusOf(error: unknown): number {
  if (error instanceof UsageError) return 400;
  if (error instanceof OperationError || error instanceof OpsError) return 409;
  return 500;
}
