/**
 * Counts round trips on one TCP connection from the order of its traffic: a client→server write that
 * follows a server response (or opens the connection) starts a new round trip; further client writes before
 * the next server byte belong to the same burst (pipelined statements are one round trip).
 */
export class BurstCounter {
  #bursts = 0;
  #lastFromClient = false;

  /** Round trips seen so far. */
  get bursts(): number {
    return this.#bursts;
  }

  /** Client bytes went to the server. */
  client(): void {
    if (!this.#lastFromClient) this.#bursts += 1;
    this.#lastFromClient = true;
  }

  /** Server bytes went to the client. */
  server(): void {
    this.#lastFromClient = false;
  }
}
