/**
 * The `package.json` `exports` condition that maps each subpath to its TypeScript source (`./lambda/index.ts`)
 * instead of the compiled module (`./dist/lambda/index.js`). Everything that runs TypeScript from this
 * repository resolves with it — tsc (`customConditions`), vitest, tsx (`--conditions`) and the esbuild bundles of
 * the functions ({@link bundleOptions}) — so the package imported by its own name and a relative import of the
 * same module are one module, never a source copy and a compiled copy. A consumer's tools do not know the
 * condition and get the compiled modules and their declarations; the construct's bundles use it in an installed
 * package too, where the sources ship beside the compiled code.
 *
 * @internal
 */
export const SOURCE_CONDITION = '@sqs-inbox-worker/source';
