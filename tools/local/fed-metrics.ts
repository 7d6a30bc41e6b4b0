import { Metrics } from '@aws-lambda-powertools/metrics';

/**
 * Powertools `Metrics` whose EMF documents go to `sink` instead of stdout: what the function would print, as a
 * document (the local metric store's `ingest` takes it). Everything else is Powertools' own.
 */
export class FedMetrics extends Metrics {
  #sink: (document: Record<string, unknown>) => void;

  constructor(
    options: ConstructorParameters<typeof Metrics>[0],
    sink: (document: Record<string, unknown>) => void = () => {},
  ) {
    super(options);
    this.#sink = sink;
  }

  /** Where the next documents go. */
  feed(sink: (document: Record<string, unknown>) => void): void {
    this.#sink = sink;
  }

  override publishStoredMetrics(): this {
    try {
      if (this.hasStoredMetrics()) this.#sink(this.serializeMetrics() as unknown as Record<string, unknown>);
    } finally {
      this.clearMetrics();
      this.clearDimensions();
      this.clearMetadata();
    }
    return this;
  }
}
