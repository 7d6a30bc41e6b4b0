import { setTimeout as delay } from 'node:timers/promises';

/** Time as the ops commands see it; tests pass a fixed or fast clock. */
export interface Clock {
  /** The current instant. */
  now(): Date;
  /** Waits `ms` milliseconds (rate limiting). */
  sleep(ms: number): Promise<void>;
}

/** The wall clock. */
export const systemClock: Clock = {
  now: () => new Date(),
  sleep: async (ms) => {
    if (ms > 0) await delay(ms);
  },
};
