/** Codes of the untyped startup-phase requests that are followed by another untyped message. */
const SSL_REQUEST = 80877103;
const GSSENC_REQUEST = 80877104;

/**
 * Counts the statements a PostgreSQL client sends on one connection by reading the frontend protocol as it
 * passes: every Parse (`P`, extended protocol) and every Query (`Q`, simple protocol) is one statement; Bind,
 * Describe, Execute, Sync and Flush are not. Reading the wire instead of hooking the client keeps the count
 * free of client-side cost (postgres.js's `debug` hook records a stack trace per query). Messages may be split
 * across chunks in any way.
 */
export class StatementCounter {
  #statements = 0;
  /** Still in the startup phase, whose messages have no type byte. */
  #untyped = true;
  /** Bytes of the current message header (type byte, then a 4-byte length) read so far. */
  #header: number[] = [];
  /** Bytes of the current message body still to skip. */
  #skip = 0;

  /** Statements seen so far. */
  get statements(): number {
    return this.#statements;
  }

  /** Feeds client→server bytes in the order they were sent. */
  feed(chunk: Uint8Array): void {
    let at = 0;
    while (at < chunk.length) {
      if (this.#skip > 0) {
        const skipped = Math.min(this.#skip, chunk.length - at);
        this.#skip -= skipped;
        at += skipped;
        continue;
      }
      // Startup messages: a 4-byte length, then a 4-byte code. Later messages: a type byte, then a 4-byte length.
      const headerLength = this.#untyped ? 8 : 5;
      while (this.#header.length < headerLength && at < chunk.length) this.#header.push(chunk[at++] ?? 0);
      if (this.#header.length < headerLength) return;
      const header = this.#header;
      this.#header = [];
      if (this.#untyped) {
        this.#skip = int32(header, 0) - 8;
        const code = int32(header, 4);
        if (code !== SSL_REQUEST && code !== GSSENC_REQUEST) this.#untyped = false;
      } else {
        this.#skip = int32(header, 1) - 4;
        const type = String.fromCharCode(header[0] ?? 0);
        if (type === 'P' || type === 'Q') this.#statements += 1;
      }
    }
  }
}

/** The big-endian 32-bit integer at `offset`. */
function int32(bytes: readonly number[], offset: number): number {
  return (
    (((bytes[offset] ?? 0) << 24) |
      ((bytes[offset + 1] ?? 0) << 16) |
      ((bytes[offset + 2] ?? 0) << 8) |
      (bytes[offset + 3] ?? 0)) >>>
    0
  );
}
