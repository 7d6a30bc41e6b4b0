import {
  Agent,
  createServer,
  request as httpRequest,
  type IncomingMessage,
  type ServerResponse,
} from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  type AwsErrorResponse,
  accessDeniedResponse,
  unknownKeyResponse,
  unreadableResponse,
} from './aws-refusal.ts';
import { type DescribedRequest, describeRequest } from './describe-request.ts';
import type { IamAuthorizer, IamRefusal } from './iam-authorizer.ts';

/** Options of {@link startIamProxy}. @internal */
export interface IamProxyOptions {
  /** The emulator behind the proxy (`http://127.0.0.1:<port>`): fauxqs (SQS and S3) or DynamoDB Local. */
  readonly upstream: string;
  readonly authorizer: IamAuthorizer;
  /** Region of requests whose credential scope names none. */
  readonly region: string;
  /** Called for every refused call (the local stack prints it, the tests collect it). */
  readonly onRefusal?: (refusal: IamRefusal) => void;
}

/** A running proxy. @internal */
export interface IamProxy {
  /** The endpoint to give the SDK clients instead of the emulator's. */
  readonly endpoint: string;
  /** Every call refused so far, oldest first. */
  readonly refusals: readonly IamRefusal[];
  /** Stops listening and closes the open connections. */
  stop(): Promise<void>;
}

const readBody = (request: IncomingMessage): Promise<Buffer> =>
  new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => resolve(Buffer.concat(chunks)));
    request.on('error', reject);
  });

const send = (response: ServerResponse, refusal: AwsErrorResponse) => {
  response.writeHead(refusal.status, {
    ...refusal.headers,
    'content-length': String(Buffer.byteLength(refusal.body)),
  });
  response.end(refusal.body);
};

/**
 * Starts the local IAM layer in front of one emulator: an HTTP proxy on 127.0.0.1 that reads each request whole,
 * describes it ({@link describeRequest}: signer, service, the IAM actions and resources AWS authorizes for it),
 * asks `authorizer` and then either forwards it unchanged (the `Host` header too, so fauxqs's queue URLs name the
 * proxy) or answers with AWS's refusal ({@link accessDeniedResponse}, {@link unknownKeyResponse}) so the caller's
 * real error path runs. Requests of services the layer does not describe are forwarded unchecked.
 *
 * Why a proxy and not a hook in the emulators: the SDK clients, fauxqs and DynamoDB Local stay exactly what they
 * are, and the same layer fronts both; the only difference a component sees is AWS's answer to a call its role
 * does not allow.
 *
 * @internal
 */
export async function startIamProxy(options: IamProxyOptions): Promise<IamProxy> {
  const proxy: ProxyState = {
    options,
    upstream: new URL(options.upstream),
    agent: new Agent({ keepAlive: true }),
    refusals: [],
  };
  const server = createServer((request, response) => {
    readBody(request)
      .then((body) => authorizeAndForward(proxy, request, response, body))
      .catch(() => response.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    refusals: proxy.refusals,
    async stop() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      proxy.agent.destroy();
    },
  };
}

/** What the steps of one proxy share: its options, the emulator behind, its connections and its refusals. */
interface ProxyState {
  readonly options: IamProxyOptions;
  readonly upstream: URL;
  readonly agent: Agent;
  readonly refusals: IamRefusal[];
}

/** One request, read whole: described, authorized, then forwarded or answered with AWS's refusal. */
async function authorizeAndForward(
  proxy: ProxyState,
  request: IncomingMessage,
  response: ServerResponse,
  body: Buffer,
): Promise<void> {
  const described = describe(proxy.options, request, body);
  if ('error' in described) {
    return send(
      response,
      unreadableResponse(`The local IAM layer could not read this request: ${described.error}`),
    );
  }
  if (described.calls.length === 0) return forward(proxy, request, response, body);
  const decision = await proxy.options.authorizer.authorize(described);
  if (decision.allowed) return forward(proxy, request, response, body, described);
  const service = described.service ?? '';
  if (decision.unknownKey)
    return send(response, unknownKeyResponse(service, request.method ?? '', decision.accessKeyId));
  return refuse(proxy, response, decision.refusal, service, request.method ?? '');
}

/** Records a refusal, tells the listener, and answers with AWS's `AccessDenied`. */
function refuse(
  proxy: ProxyState,
  response: ServerResponse,
  refusal: IamRefusal,
  service: string,
  method: string,
): void {
  proxy.refusals.push(refusal);
  proxy.options.onRefusal?.(refusal);
  send(response, accessDeniedResponse(service, method, refusal.message));
}

function describe(
  options: IamProxyOptions,
  request: IncomingMessage,
  body: Buffer,
): DescribedRequest | { error: string } {
  try {
    return describeRequest(
      { method: request.method ?? 'GET', url: request.url ?? '/', headers: request.headers, body },
      { region: options.region, partitionKeyOf: options.authorizer.partitionKeyOf },
    );
  } catch (error) {
    // Never forwarded unchecked: a request the layer cannot read is refused, saying why.
    return { error: (error as Error).message };
  }
}

/**
 * S3's rule for an object that is not there: 404 (`NoSuchKey`) only to a caller that may also list the bucket
 * (`s3:ListBucket`), else 403 `AccessDenied`, so that a reader cannot learn which keys exist. fauxqs answers 404
 * to anyone; the layer turns it into AWS's 403 for a caller whose role has no ListBucket on the bucket.
 */
async function missingObjectAnswer(
  authorizer: IamAuthorizer,
  described: DescribedRequest,
  statusCode: number | undefined,
): Promise<IamRefusal | undefined> {
  const read = described.calls.find(
    (call) => call.action === 's3:GetObject' || call.action === 's3:GetObjectVersion',
  );
  if (statusCode !== 404 || described.service !== 's3' || !read) return undefined;
  const bucketArn = read.resource.slice(0, read.resource.indexOf('/'));
  const listing = await authorizer.authorize({
    ...described,
    operation: 'ListObjectsV2',
    calls: [{ action: 's3:ListBucket', resource: bucketArn }],
  });
  return !listing.allowed && !listing.unknownKey ? listing.refusal : undefined;
}

/** Passes a request on to the emulator unchanged and its answer back (an S3 miss first checked, see above). */
function forward(
  proxy: ProxyState,
  request: IncomingMessage,
  response: ServerResponse,
  body: Buffer,
  described?: DescribedRequest,
): void {
  const outgoing = httpRequest(
    {
      host: proxy.upstream.hostname,
      port: proxy.upstream.port,
      method: request.method,
      path: request.url,
      headers: request.headers,
      agent: proxy.agent,
    },
    (answer) => {
      const pass = () => {
        response.writeHead(answer.statusCode ?? 502, answer.headers);
        // An emulator that dies mid-answer (a restart, a crash) must cut the client's connection too: piping does
        // not pass the error on, and the client would wait for the rest of the body forever.
        answer.once('error', () => response.destroy());
        answer.once('aborted', () => response.destroy());
        answer.once('close', () => {
          if (!answer.complete) response.destroy();
        });
        answer.pipe(response);
      };
      if (!described) return pass();
      missingObjectAnswer(proxy.options.authorizer, described, answer.statusCode)
        .then((refusal) => {
          if (!refusal) return pass();
          answer.resume();
          refuse(proxy, response, refusal, 's3', request.method ?? '');
        })
        .catch(() => response.destroy());
    },
  );
  outgoing.on('error', (error: NodeJS.ErrnoException) => upstreamUnreachable(proxy, response, error));
  // A client that gives up (an aborted long poll) ends the upstream request too.
  response.on('close', () => {
    if (!response.writableFinished) outgoing.destroy();
  });
  outgoing.end(body);
}

/** The emulator behind did not answer: a 5xx naming why (ECONNREFUSED …), which the SDK reports and retries. */
function upstreamUnreachable(
  proxy: ProxyState,
  response: ServerResponse,
  error: NodeJS.ErrnoException,
): void {
  if (response.headersSent) {
    response.destroy();
    return;
  }
  const message = `the local IAM layer could not reach ${proxy.options.upstream}: ${error.code ?? ''} ${error.message}`;
  const body = JSON.stringify({ __type: 'com.amazon.coral.service#InternalFailure', message });
  response.writeHead(502, {
    'content-type': 'application/x-amz-json-1.0',
    'content-length': String(Buffer.byteLength(body)),
  });
  response.end(body);
}
