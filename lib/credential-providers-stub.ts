import type { DefaultProviderInit, defaultProvider } from '@aws-sdk/credential-provider-node';

type Chain = ReturnType<typeof defaultProvider>;

/**
 * Stand-in for `@aws-sdk/credential-providers` in the Lambda bundles, where only the RDS IAM signer imports it,
 * for `fromNodeProviderChain`. The package's index exports every provider (Cognito, temporary credentials through
 * STS, …) and esbuild ships each one's `import()` target, ~75 KiB of chunks nobody loads. This is the package's own
 * `fromNodeProviderChain`: the SDK's default chain, made on first use.
 *
 * @internal
 */
export function fromNodeProviderChain(init: DefaultProviderInit = {}): Chain {
  let chain: Chain | undefined;
  return async (options) => {
    if (!chain) {
      const { defaultProvider } = await import('@aws-sdk/credential-provider-node');
      chain = defaultProvider({ ...init });
    }
    return chain(options);
  };
}
