/**
 * Stand-in, in the Lambda bundles, for the SDK's credential providers a Lambda function never reaches: SSO, shared
 * config and credentials files (`fromIni`, with the STS and sign-in clients it brings), `credential_process` and
 * web identity token files. The SDK's default chain (`@aws-sdk/credential-provider-node`) loads each with
 * `import()` only after the environment's credentials are missing, and Lambda always sets them
 * (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`); yet esbuild ships every `import()` target,
 * ~120 KiB of chunks nobody loads. Each provider here declines as the real one does when it has nothing to offer
 * (`tryNextLink`), so the chain goes on to the container and instance metadata providers, which are kept.
 *
 * @internal
 */
function notBundled(provider: string) {
  return () => async (): Promise<never> => {
    throw Object.assign(
      new Error(
        `${provider} is not in this Lambda bundle (lib/bundled-function.ts): a Lambda function takes its credentials from the environment Lambda sets; run the code unbundled to use ${provider}`,
      ),
      { name: 'CredentialsProviderError', tryNextLink: true },
    );
  };
}

/** @internal */
export const fromSSO = notBundled('fromSSO');
/** @internal */
export const fromIni = notBundled('fromIni');
/** @internal */
export const fromProcess = notBundled('fromProcess');
/** @internal */
export const fromTokenFile = notBundled('fromTokenFile');
