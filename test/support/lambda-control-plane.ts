import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  GetEventSourceMappingCommand,
  ListTagsCommand,
  TagResourceCommand,
  UntagResourceCommand,
  UpdateEventSourceMappingCommand,
} from '@aws-sdk/client-lambda';
import type { LocalLambdaControl } from '../../tools/local/local-lambda-control.ts';

/** Lambda's control plane over HTTP on 127.0.0.1, returned by {@link serveLambdaControlPlane}. */
export interface LambdaControlPlane {
  /** Set it as `AWS_ENDPOINT_URL_LAMBDA`: a `new LambdaClient({})` then sends here. */
  readonly endpoint: string;
  close(): Promise<void>;
}

const MAPPING = /^\/2015-03-31\/event-source-mappings\/([^/?]+)\/?$/;
const TAGS = /^\/2017-03-31\/tags\/([^?]+)$/;

/**
 * Serves the REST routes of the commands the breaker sends (GetEventSourceMapping, UpdateEventSourceMapping,
 * ListTags, TagResource, UntagResource) over a {@link LocalLambdaControl}, for a deployed entry that makes its own
 * `LambdaClient`: each request becomes the SDK command the recorded client applies to the local event source mapping.
 * Anything else answers 404; a command the recorded client refuses answers 400 with its message.
 */
export async function serveLambdaControlPlane(recorded: LocalLambdaControl): Promise<LambdaControlPlane> {
  const server = createServer(async (request, response) => {
    try {
      const command = await commandOf(request);
      if (!command) {
        response.writeHead(404, { 'content-type': 'application/json' });
        response.end(JSON.stringify({ message: `no route ${request.method} ${request.url}` }));
        return;
      }
      const output: unknown = await recorded.client.send(command as never);
      const body = JSON.stringify(output, (key, value) =>
        key === 'LastModified' ? new Date(value).getTime() / 1000 : value,
      );
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end(body);
    } catch (error) {
      response.writeHead(400, {
        'content-type': 'application/json',
        'x-amzn-errortype': 'InvalidParameterValueException',
      });
      response.end(JSON.stringify({ message: (error as Error).message }));
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** The SDK command a request stands for, or undefined. */
async function commandOf(request: IncomingMessage): Promise<unknown> {
  const url = new URL(request.url ?? '/', 'http://localhost');
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  const body = chunks.length > 0 ? JSON.parse(Buffer.concat(chunks).toString('utf8')) : {};
  const mapping = MAPPING.exec(url.pathname);
  if (mapping) {
    const UUID = decodeURIComponent(mapping[1] as string);
    if (request.method === 'GET') return new GetEventSourceMappingCommand({ UUID });
    if (request.method === 'PUT') return new UpdateEventSourceMappingCommand({ ...body, UUID });
  }
  const tags = TAGS.exec(url.pathname);
  if (tags) {
    const Resource = decodeURIComponent(tags[1] as string);
    if (request.method === 'GET') return new ListTagsCommand({ Resource });
    if (request.method === 'POST') return new TagResourceCommand({ Resource, Tags: body.Tags });
    if (request.method === 'DELETE')
      return new UntagResourceCommand({ Resource, TagKeys: url.searchParams.getAll('tagKeys') });
  }
  return undefined;
}
