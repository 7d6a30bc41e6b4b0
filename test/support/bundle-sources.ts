import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Every input file a bundle folder was built from: the `sources` of each source map in it (esbuild writes one per
 * output; the stack bundles with `sourcemap: 'linked'`), so a test can assert what a deployed bundle holds.
 */
export function bundledSources(dir: string): string[] {
  const maps = readdirSync(dir, { recursive: true, encoding: 'utf8' }).filter((name) =>
    name.endsWith('.map'),
  );
  if (maps.length === 0) throw new Error(`no source map under ${dir}: was it bundled with sourcemap on?`);
  return maps.flatMap(
    (name) => (JSON.parse(readFileSync(join(dir, name), 'utf8')) as { sources: string[] }).sources,
  );
}

/**
 * What must never be deployed: the local IAM layer and its AGPL-3.0 evaluator (`@cloud-copilot/*`), a
 * devDependency for local runs only.
 */
export const LOCAL_ONLY_SOURCES = /@cloud-copilot\/|tools\/local\//;
