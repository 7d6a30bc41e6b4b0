/** Thrown by {@link checkInboxRetention} when inbox rows would be deleted while a copy of their message can still arrive. */
export class RetentionWindowError extends Error {
  constructor(
    message: string,
    readonly olderThanSeconds: number,
    readonly minimumSeconds: number,
  ) {
    super(message);
    this.name = 'RetentionWindowError';
  }
}

/** The queues' retentions that bound how late a copy of a message can arrive, in seconds. */
export interface QueueRetentions {
  /** The source queue's MessageRetentionPeriod. */
  readonly sourceRetentionSeconds: number;
  /** The DLQ's MessageRetentionPeriod. */
  readonly dlqRetentionSeconds: number;
}

/**
 * The retention guard of inbox purges (`sqs-worker inbox purge` and the scheduled retention job): a COMPLETED
 * inbox row is the only thing that makes a late copy of its message a duplicate, and a copy can sit in the source
 * queue and then in the DLQ (keeping its original enqueue time) for source retention + DLQ retention. A row
 * deleted sooner turns a redrive into a second effect.
 *
 * @param name what the window is called where it was given (`--older-than`, `inboxRetention`), for the message.
 * @throws RetentionWindowError naming the window, the two retentions, their sum and the fix.
 */
export function checkInboxRetention(
  olderThanSeconds: number,
  retentions: QueueRetentions,
  name: string,
): void {
  const minimum = retentions.sourceRetentionSeconds + retentions.dlqRetentionSeconds;
  if (olderThanSeconds >= minimum) return;
  throw new RetentionWindowError(
    `Refusing to purge: ${name} ${formatDays(olderThanSeconds)} (${olderThanSeconds}s) is shorter than source retention ` +
      `${formatDays(retentions.sourceRetentionSeconds)} + DLQ retention ${formatDays(retentions.dlqRetentionSeconds)} = ` +
      `${formatDays(minimum)} (${minimum}s). A message redriven within that window would find no inbox row and run twice. ` +
      `Use ${name} ${Math.ceil(minimum / 86_400)}d or more.`,
    olderThanSeconds,
    minimum,
  );
}

/** Formats seconds as a short duration ("18d", "3d 4h", "12m 5s"). */
export function formatDays(seconds: number): string {
  const units: Array<[string, number]> = [
    ['d', 86_400],
    ['h', 3_600],
    ['m', 60],
    ['s', 1],
  ];
  const parts: string[] = [];
  let rest = Math.max(0, Math.round(seconds));
  for (const [unit, size] of units) {
    const count = Math.floor(rest / size);
    if (count > 0) parts.push(`${count}${unit}`);
    rest -= count * size;
  }
  return parts.slice(0, 2).join(' ') || '0s';
}
