import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

/**
 * Runs one invocation of a bundled handler in a fresh `node` process, as the Lambda runtime would load it
 * (`--enable-source-maps` as the stack sets), with only `env` (and PATH) as its environment, and returns its
 * response and the JSON log lines it wrote. Rejects with its stderr when it fails to load or throws.
 */
export function invokeBundle<T>(
  dir: string,
  event: unknown,
  env: Record<string, string>,
): Promise<{ response: T; logs: Record<string, unknown>[] }> {
  const script = `
    const { handler } = await import(${JSON.stringify(pathToFileURL(join(dir, 'index.mjs')).href)});
    const deadline = Date.now() + 30_000;
    const context = { functionName: 'bundle-test', awsRequestId: 'bundle-test', getRemainingTimeInMillis: () => deadline - Date.now() };
    const response = await handler(JSON.parse(process.env.TEST_EVENT), context);
    process.stdout.write('\\nRESPONSE ' + JSON.stringify(response) + '\\n');
    process.exit(0);
  `;
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--enable-source-maps', '--input-type=module', '-e', script], {
      env: { PATH: process.env.PATH ?? '', ...env, TEST_EVENT: JSON.stringify(event) },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => {
      stdout += chunk;
    });
    child.stderr.on('data', (chunk) => {
      stderr += chunk;
    });
    child.on('error', reject);
    child.on('exit', (code) => {
      // The handler's own logs share stdout: the response is the line the script marks.
      const line = stdout.split('\n').find((text) => text.startsWith('RESPONSE '));
      // Powertools writes INFO lines to stdout, WARN and ERROR to stderr.
      const logs = `${stdout}\n${stderr}`
        .split('\n')
        .filter((text) => text.startsWith('{'))
        .map((text) => JSON.parse(text));
      if (code === 0 && line) resolve({ response: JSON.parse(line.slice('RESPONSE '.length)), logs });
      else reject(new Error(`bundle exited ${code}: ${stderr}`));
    });
  });
}
