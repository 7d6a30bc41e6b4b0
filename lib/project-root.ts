import { fileURLToPath } from 'node:url';

/**
 * Root of the package (the folder holding package.json), resolved from this file: one folder up from the
 * TypeScript source (`lib/project-root.ts`, in this repository), two from the compiled module of an installed
 * package (`dist/lib/project-root.js`). The files the construct reads at synth are found from here in both
 * layouts: the Lambda entries' TypeScript sources under `lambda/` (which the package ships, so a function is
 * bundled from the very sources this repository tests), the esbuild stubs under `lib/`, and `migrations/`.
 *
 * @internal
 */
export const PROJECT_ROOT = fileURLToPath(
  new URL(import.meta.url.endsWith('.ts') ? '..' : '../..', import.meta.url),
);
