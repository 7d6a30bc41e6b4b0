import type { ContentionPass, ContentionSettings } from './contention.ts';
import { formatMs } from './statistics.ts';

/** One pass's line. */
function passLine(pass: ContentionPass): string {
  return `  ${pass.mode.padEnd(9)} ${pass.messagesPerSecond.toFixed(1).padStart(7)} msg/s  retryable ${pass.retryablePerMessage.toFixed(2)}/msg  extra receives ${String(pass.extraReceives).padStart(5)}  p99 record ${formatMs(pass.p99RecordMs).padStart(9)}  DLQ ${pass.dlq}  lowest limit ${pass.lowestLimit}  (${pass.completed} completed in ${pass.seconds.toFixed(1)} s)`;
}

/** `a / b` as a percentage, or which side is 0. */
function ratio(a: number, b: number): string {
  return b === 0 ? (a === 0 ? 'both 0' : 'fixed 0') : `${((a / b) * 100).toFixed(0)} %`;
}

/** The adaptive pass against the fixed one: its cost when quiet, its targets with a slow phase. */
function ratioLine(fixed: ContentionPass, adaptive: ContentionPass): string {
  return fixed.scenario === 'quiet'
    ? `  adaptive vs fixed: throughput ${ratio(adaptive.messagesPerSecond, fixed.messagesPerSecond)} (target: no measurable cost), p99 record ${formatMs(adaptive.p99RecordMs)} vs ${formatMs(fixed.p99RecordMs)}`
    : `  adaptive vs fixed: retryable ${ratio(adaptive.retryablePerMessage, fixed.retryablePerMessage)}, extra receives ${ratio(adaptive.extraReceives, fixed.extraReceives)} (target ≤ 50 %), throughput ${ratio(adaptive.messagesPerSecond, fixed.messagesPerSecond)} (target ≥ 90 %), DLQ ${adaptive.dlq} (target 0)`;
}

/** Each runtime's heading: what its fixed setting is and what its limit counts. */
function runtimeHeading(runtime: ContentionPass['runtime'], settings: ContentionSettings): string {
  const common = `${settings.messages} messages on ${settings.hotRows} hot rows, lock_timeout ${settings.lockTimeoutMs} ms`;
  if (runtime === 'poller') {
    return `Contention (poller): ${common}, concurrency ${settings.poller.concurrency} (the limit: records in flight)`;
  }
  const { invocations, recordConcurrency, batchSize, floor } = settings.lambda;
  return `Contention (Lambda): ${common}, MaximumConcurrency ${invocations} × ${recordConcurrency} records at a time, batch ${batchSize} (the limit: invocations, floor ${floor}; the loop's clock 30× the deployed one)`;
}

/** A scenario's heading: the hot rows alone, or how the database is slow (and its messages when not the line's). */
function scenarioHeading(pass: ContentionPass, settings: ContentionSettings): string {
  const messages = pass.messages === settings.messages ? '' : `, ${pass.messages} messages`;
  if (pass.slowForMs === 0) return ` the hot rows alone${messages}:`;
  return pass.holdMs >= pass.slowForMs
    ? ` and the rows locked for the first ${pass.slowForMs / 1000} s in one hold${messages}:`
    : ` and a slow database (the rows held ${pass.holdMs} ms at a time for the first ${pass.slowForMs / 1000} s)${messages}:`;
}

/**
 * The contention comparison: per runtime, per scenario (the hot rows alone, then each slow phase), one line per pass,
 * then the adaptive pass against the fixed one and its targets.
 */
export function renderContention(result: {
  readonly settings: ContentionSettings;
  readonly passes: readonly ContentionPass[];
}): string {
  const { settings, passes } = result;
  const lines: string[] = [];
  for (const runtime of ['poller', 'lambda'] as const) {
    const ofRuntime = passes.filter((pass) => pass.runtime === runtime);
    if (ofRuntime.length === 0) continue;
    lines.push(runtimeHeading(runtime, settings));
    const phaseOf = (pass: ContentionPass) => `${pass.messages}/${pass.slowForMs}/${pass.holdMs}`;
    for (const phase of [...new Set(ofRuntime.map(phaseOf))]) {
      const of = ofRuntime.filter((pass) => phaseOf(pass) === phase);
      lines.push(scenarioHeading(of[0] as ContentionPass, settings), ...of.map(passLine));
      const fixed = of.find((pass) => pass.mode === 'fixed');
      const adaptive = of.find((pass) => pass.mode === 'adaptive');
      if (fixed && adaptive) lines.push(ratioLine(fixed, adaptive));
    }
  }
  return lines.join('\n');
}
