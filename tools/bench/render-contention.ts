import type { ContentionPass, ContentionSettings } from './contention.ts';
import { formatMs } from './statistics.ts';

/** The contention comparison: per scenario, one line per pass, then the adaptive pass against its targets. */
export function renderContention(result: {
  readonly settings: ContentionSettings;
  readonly passes: readonly ContentionPass[];
}): string {
  const { settings, passes } = result;
  const line = (pass: ContentionPass) =>
    `  ${pass.mode.padEnd(9)} ${pass.messagesPerSecond.toFixed(1).padStart(7)} msg/s  retryable ${pass.retryablePerMessage.toFixed(2)}/msg  extra receives ${String(pass.extraReceives).padStart(5)}  p99 record ${formatMs(pass.p99RecordMs).padStart(9)}  DLQ ${pass.dlq}  lowest limit ${pass.lowestLimit}  (${pass.completed} completed in ${pass.seconds.toFixed(1)} s)`;
  const ratio = (a: number, b: number) =>
    b === 0 ? (a === 0 ? 'both 0' : 'fixed 0') : `${((a / b) * 100).toFixed(0)} %`;
  const lines = [
    `Contention (poller): ${settings.messages} messages on ${settings.hotRows} hot rows, concurrency ${settings.concurrency}, lock_timeout ${settings.lockTimeoutMs} ms`,
  ];
  for (const scenario of ['quiet', 'slow'] as const) {
    const of = passes.filter((pass) => pass.scenario === scenario);
    lines.push(
      scenario === 'quiet'
        ? ' the hot rows alone:'
        : ` and a slow database (the rows held ${settings.holdMs} ms at a time for the first ${settings.slowForMs / 1000} s):`,
      ...of.map(line),
    );
    const fixed = of.find((pass) => pass.mode === 'fixed');
    const adaptive = of.find((pass) => pass.mode === 'adaptive');
    if (!fixed || !adaptive) continue;
    lines.push(
      scenario === 'quiet'
        ? `  adaptive vs fixed: throughput ${ratio(adaptive.messagesPerSecond, fixed.messagesPerSecond)} (target: no measurable cost), p99 record ${formatMs(adaptive.p99RecordMs)} vs ${formatMs(fixed.p99RecordMs)}`
        : `  adaptive vs fixed: retryable ${ratio(adaptive.retryablePerMessage, fixed.retryablePerMessage)}, extra receives ${ratio(adaptive.extraReceives, fixed.extraReceives)} (target ≤ 50 %), throughput ${ratio(adaptive.messagesPerSecond, fixed.messagesPerSecond)} (target ≥ 90 %), DLQ ${adaptive.dlq} (target 0)`,
    );
  }
  return lines.join('\n');
}
