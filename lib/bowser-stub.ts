/**
 * Stand-in for `bowser` in the bundles. `@aws-sdk/core` imports that browser user-agent parser with `import()` in
 * code only browser clients run (it reads `window.navigator`); with code splitting esbuild would still ship it
 * as a 35 KiB chunk nobody loads. Should a Node client ever reach it, the user agent says `other`/`unknown`.
 *
 * @internal
 */
export function parse(): Record<string, never> {
  return {};
}

export default { parse };
