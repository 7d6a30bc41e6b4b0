/** Codes of the untyped startup-phase requests that are followed by another untyped message. */
const SSL_REQUEST = 80877103;
const GSSENC_REQUEST = 80877104;

/** Longest statement body kept for {@link StatementCounter.seen}; a longer one is kept cut, its size exact. */
const KEPT_BYTES = 20_000;

/** A statement as it crossed the wire. */
export interface SeenStatement {
  /** The SQL text (cut at 20,000 bytes). */
  readonly text: string;
  /** Its size in bytes, as sent. */
  readonly bytes: number;
  /** Name of the prepared statement a Parse created; empty for an unnamed statement or a simple Query. */
  readonly name: string;
}

/**
 * Counts the statements a PostgreSQL client sends on one connection by reading the frontend protocol as it
 * passes: every Parse (`P`, extended protocol) and every Query (`Q`, simple protocol) is one statement; Bind,
 * Describe, Execute, Sync and Flush are not. Reading the wire instead of hooking the client keeps the count
 * free of client-side cost (postgres.js's `debug` hook records a stack trace per query). Messages may be split
 * across chunks in any way. With `onStatement`, each statement's text, size and prepared-statement name is
 * handed over too (for the bench's pinning audit).
 */
export class StatementCounter {
  #statements = 0;
  readonly #onStatement: ((statement: SeenStatement) => void) | undefined;
  /** Type and declared body length of the Parse or Query being read, and its body bytes so far. */
  #body: { type: string; length: number; bytes: number[] } | undefined;

  constructor(onStatement?: (statement: SeenStatement) => void) {
    this.#onStatement = onStatement;
  }
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
        const body = this.#body;
        if (body && body.bytes.length < KEPT_BYTES) {
          for (const byte of chunk.subarray(at, at + Math.min(skipped, KEPT_BYTES - body.bytes.length)))
            body.bytes.push(byte);
        }
        this.#skip -= skipped;
        at += skipped;
        if (this.#skip === 0 && body) this.#report(body);
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
        if (type === 'P' || type === 'Q') {
          this.#statements += 1;
          if (this.#onStatement) {
            this.#body = { type, length: this.#skip, bytes: [] };
            if (this.#skip === 0) this.#report(this.#body);
          }
        }
      }
    }
  }

  /** Hands a complete Parse or Query body to `onStatement`: Parse is name, text, …; Query is text. */
  #report(body: { type: string; length: number; bytes: number[] }): void {
    this.#body = undefined;
    const bytes = Buffer.from(body.bytes);
    const cString = (from: number) => {
      const end = bytes.indexOf(0, from);
      return { value: bytes.toString('utf8', from, end < 0 ? bytes.length : end), next: end + 1 };
    };
    const name = body.type === 'P' ? cString(0) : { value: '', next: 0 };
    const text = cString(name.next).value;
    // A Query body is the text and its terminator; a cut Parse body counts whole (an upper bound of its text).
    const textBytes =
      body.type === 'Q'
        ? body.length - 1
        : bytes.length < body.length
          ? body.length
          : Buffer.byteLength(text);
    this.#onStatement?.({ text, bytes: textBytes, name: name.value });
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
