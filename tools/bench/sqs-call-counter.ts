const HEADER_END = Buffer.from('\r\n\r\n');

/** Longest request head kept while waiting for its end (an SQS client's is well under 2 KiB). */
const MAX_HEAD_BYTES = 64 * 1024;

/**
 * Counts the SQS API calls an HTTP/1.1 client sends on one connection by reading the requests as they pass: each
 * request's action is its `X-Amz-Target` header (`AmazonSQS.ReceiveMessage`: the JSON protocol, which the AWS SDK v3
 * speaks to SQS), `unknown` without one. Request heads and bodies may be split across
 * chunks in any way; a body is skipped by its `Content-Length`, so text inside a body is never taken for a header.
 * Counting on the wire rather than in an SDK middleware treats both sides of a comparison alike, whichever client
 * they build.
 */
export class SqsCallCounter {
  readonly #calls = new Map<string, number>();
  /** Bytes of the request head read so far. */
  #head: Buffer = Buffer.alloc(0);
  /** Bytes of the current request's body still to skip. */
  #skip = 0;

  /** Calls seen so far, by action (`ReceiveMessage`, `DeleteMessageBatch`, …; `unknown` without one). */
  get calls(): ReadonlyMap<string, number> {
    return this.#calls;
  }

  /** Reads the next client→server bytes of the connection. */
  feed(chunk: Buffer): void {
    let rest = chunk;
    while (rest.length > 0) {
      if (this.#skip > 0) {
        const skipped = Math.min(this.#skip, rest.length);
        this.#skip -= skipped;
        rest = rest.subarray(skipped);
        continue;
      }
      const searchFrom = Math.max(0, this.#head.length - (HEADER_END.length - 1));
      this.#head = Buffer.concat([this.#head, rest]);
      const end = this.#head.indexOf(HEADER_END, searchFrom);
      if (end < 0) {
        if (this.#head.length > MAX_HEAD_BYTES) this.#head = this.#head.subarray(-HEADER_END.length);
        return;
      }
      const head = this.#head.subarray(0, end).toString('latin1');
      rest = this.#head.subarray(end + HEADER_END.length);
      this.#head = Buffer.alloc(0);
      this.#request(head);
    }
  }

  /** One complete request head: its action counted, its body's length to skip. */
  #request(head: string): void {
    let action = 'unknown';
    for (const line of head.split('\r\n').slice(1)) {
      const colon = line.indexOf(':');
      if (colon < 0) continue;
      const name = line.slice(0, colon).trim().toLowerCase();
      const value = line.slice(colon + 1).trim();
      if (name === 'x-amz-target') action = value.slice(value.lastIndexOf('.') + 1);
      else if (name === 'content-length') this.#skip = Number(value) || 0;
    }
    this.#calls.set(action, (this.#calls.get(action) ?? 0) + 1);
  }
}
