/**
 * A counting semaphore with FIFO waiters, resizable while in use (the mapping's `MaximumConcurrency`).
 *
 * @internal
 */
export class ResizableSemaphore {
  #size: number;
  /** Negative after a shrink, until enough holders release. */
  #free: number;
  readonly #waiters: (() => void)[] = [];

  constructor(initial: number) {
    this.#size = initial;
    this.#free = initial;
  }

  get size(): number {
    return this.#size;
  }

  /** Changes the number of slots; holders above a smaller size keep theirs until they release. */
  resize(next: number): void {
    this.#free += next - this.#size;
    this.#size = next;
    while (this.#free > 0 && this.#waiters.length > 0) {
      this.#free -= 1;
      this.#waiters.shift()?.();
    }
  }

  acquire(): Promise<void> {
    if (this.#free > 0) {
      this.#free -= 1;
      return Promise.resolve();
    }
    return new Promise<void>((resolve) => {
      this.#waiters.push(resolve);
    });
  }

  release(): void {
    const next = this.#free >= 0 ? this.#waiters.shift() : undefined;
    if (next) next();
    else this.#free += 1;
  }

  /** Wakes every waiter (each must release what it was given). */
  wakeAll(): void {
    for (const waiter of this.#waiters.splice(0)) {
      this.#free -= 1;
      waiter();
    }
  }
}
