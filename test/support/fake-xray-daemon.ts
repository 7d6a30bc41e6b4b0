import { createSocket } from 'node:dgram';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

/** A segment document as the X-Ray daemon receives it (the fields the tests read). */
export interface ReceivedSegment {
  readonly name: string;
  readonly id: string;
  readonly trace_id: string;
  readonly start_time: number;
  readonly end_time?: number;
  readonly origin?: string;
  readonly annotations?: Record<string, string | number | boolean>;
  readonly metadata?: Record<string, Record<string, unknown>>;
  readonly error?: boolean;
  readonly fault?: boolean;
  readonly aws?: Record<string, unknown>;
}

/** A local stand-in for the X-Ray daemon, returned by {@link startFakeXRayDaemon}. */
export interface FakeXRayDaemon {
  /** The value of `AWS_XRAY_DAEMON_ADDRESS` that points the X-Ray SDK at it (`udp:… tcp:…`). */
  readonly address: string;
  readonly udpPort: number;
  /** Every segment received, parsed, oldest first. */
  readonly segments: ReceivedSegment[];
  /** GetSamplingRules calls answered so far. */
  readonly rulesServed: number;
  close(): Promise<void>;
}

/**
 * The two sides of the X-Ray daemon the SDK talks to, on 127.0.0.1: segments over UDP (each datagram the daemon's
 * protocol header, a newline, one segment document), and the sampling API over HTTP (the daemon proxies
 * `GetSamplingRules` and `SamplingTargets` to X-Ray): one rule that samples everything (fixed rate 1), unless
 * `fixedRate` says otherwise, and no targets.
 */
export async function startFakeXRayDaemon(options: { fixedRate?: number } = {}): Promise<FakeXRayDaemon> {
  const segments: ReceivedSegment[] = [];
  let rulesServed = 0;
  const udp = createSocket('udp4');
  udp.on('message', (message) => {
    const text = message.toString('utf8');
    const newline = text.indexOf('\n');
    if (newline < 0) return;
    segments.push(JSON.parse(text.slice(newline + 1)) as ReceivedSegment);
  });
  await new Promise<void>((resolve) => udp.bind(0, '127.0.0.1', resolve));
  const rule = {
    RuleName: 'everything',
    Priority: 1,
    FixedRate: options.fixedRate ?? 1,
    ReservoirSize: 0,
    ServiceName: '*',
    ServiceType: '*',
    Host: '*',
    HTTPMethod: '*',
    URLPath: '*',
    ResourceARN: '*',
    Version: 1,
    Attributes: {},
  };
  const http = createServer((request, response) => {
    request.resume();
    request.on('end', () => {
      response.setHeader('content-type', 'application/json');
      if (request.url === '/GetSamplingRules') {
        rulesServed += 1;
        response.end(JSON.stringify({ SamplingRuleRecords: [{ SamplingRule: rule }] }));
      } else if (request.url === '/SamplingTargets') {
        response.end(
          JSON.stringify({
            SamplingTargetDocuments: [],
            LastRuleModification: 0,
            UnprocessedStatistics: [],
          }),
        );
      } else {
        response.statusCode = 404;
        response.end('{}');
      }
    });
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  const udpPort = (udp.address() as AddressInfo).port;
  const tcpPort = (http.address() as AddressInfo).port;
  return {
    address: `udp:127.0.0.1:${udpPort} tcp:127.0.0.1:${tcpPort}`,
    udpPort,
    segments,
    get rulesServed() {
      return rulesServed;
    },
    async close() {
      http.closeAllConnections();
      await Promise.all([
        new Promise<void>((resolve) => http.close(() => resolve())),
        new Promise<void>((resolve) => udp.close(() => resolve())),
      ]);
    },
  };
}
