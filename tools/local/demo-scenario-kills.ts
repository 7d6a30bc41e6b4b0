import type { BigPayloadCase } from './big-payload-case.ts';
import type { InvocationReport } from './event-source-mapping.ts';
import type { PollerTaskExit } from './poller-process.ts';

/**
 * The consumer callbacks that push each kill for memory or time (and each poller task that exited by itself) onto
 * `kills`, worded as AWS reports it, and feed the payload-memory case (`bigCase`, when it runs) every report and exit.
 *
 * @internal
 */
export function killRecorder(
  kills: string[],
  bigCase?: BigPayloadCase,
): {
  onInvocation(report: InvocationReport): void;
  onTaskExit(exit: PollerTaskExit): void;
} {
  return {
    onInvocation: (report) => {
      bigCase?.onInvocation(report);
      if (report.reason === 'out-of-memory' || report.reason === 'timeout')
        kills.push(`${report.detail} (${report.errorType}); ${report.function?.report ?? ''}`);
    },
    onTaskExit: (exit) => {
      bigCase?.onTaskExit(exit);
      if (exit.outOfMemory)
        kills.push(
          `poller task ${exit.task} stopped: ${exit.stoppedReason} (exit code ${exit.exitCode}), peak ${exit.peakMiB} MiB`,
        );
      else if (!exit.stopped)
        kills.push(`poller task ${exit.task} exited by itself (exit code ${exit.exitCode})`);
    },
  };
}
