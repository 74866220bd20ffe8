import { TERMINAL_EVENT_TYPES, type DeliveredEvent, type ModelProgressPayload } from '@conclave/contracts';
import {
  describeLine,
  participantLabel as labelFor,
  plainPhaseLine,
  stageLabel,
} from '@conclave/deliberation/event-text';

/** One MCP progress notification's values (`notifications/progress` without its token). */
export interface ProgressUpdate {
  /** Increases with every notification of a call, as the protocol requires. */
  progress: number;
  /**
   * The steps expected: the model calls the mode's plan allows at most, and the end; absent when
   * unknown.
   */
  total?: number;
  message: string;
}

export { stageLabel };

/**
 * Who made a call, as the event names them: a model id, or `participant #n` where the mode keeps
 * authors anonymous during the run (Delphi panelists): the index is never turned into a model here.
 */
export const participantLabel = (participant: string | number): string => labelFor(participant, 'mcp');

/**
 * The line a mode event (not `model_progress`) is reported with, or null for an event not worth
 * one: the event describer's words (`@conclave/deliberation/event-text`, audience `mcp`). Only what
 * the event itself carries is said: nothing a mode hides during the run.
 */
export function describeModeEvent(event: DeliveredEvent): string | null {
  try {
    return describeLine(event, 'mcp');
  } catch {
    // a payload of another shape than its mode document says: the plain line of its stage
    return plainPhaseLine(event.type, 'mcp');
  }
}

const seconds = (ms: number): number => Math.max(0, Math.round(ms / 1000));

/** Names a few of `names`, then how many more. */
function some(names: string[], shown = 3): string {
  const head = names.slice(0, shown).join(', ');
  return names.length > shown ? `${head} and ${names.length - shown} more` : head;
}

/**
 * Turns a deliberation's events into MCP progress notifications: one per stage start or end and per
 * model call settled, each with a larger `progress` than the last. `progress` counts the steps done
 * (model calls settled, then the end); the notifications in between (stage lines, heartbeats) add
 * fractions that approach but never reach the next whole step, so the count stays true and still
 * increases every time. `total` is the number of calls the mode's plan allows at most plus one for
 * the end (raised if a run makes more calls).
 */
export class ProgressTracker {
  private settled = 0;
  /** Notifications since the last settled call. */
  private between = 0;
  /** Calls started and not yet settled, by stage and participant. */
  private readonly inFlight = new Map<string, { stage: string; who: string }>();
  /** Per stage: calls started, and settled. */
  private readonly stages = new Map<string, { started: number; settled: number }>();

  constructor(
    private readonly plannedCalls: number | null,
    private readonly startedAt: number,
  ) {}

  /** A line of the caller's own (the run's start), as the next notification. */
  note(message: string): ProgressUpdate {
    return this.next(message, false);
  }

  /** The update an event is reported with, or null when it is not reported on its own. */
  onEvent(event: DeliveredEvent): ProgressUpdate | null {
    if (event.type === 'model_progress') return this.onCall(event);
    const message = describeModeEvent(event);
    if (message === null) return null;
    // The end is the last step: complete, failed or cancelled.
    return this.next(message, TERMINAL_EVENT_TYPES.includes(event.type));
  }

  /**
   * The notification sent while nothing else happens: how long the run has taken and whom it waits
   * for (by the names the events gave them).
   */
  heartbeat(now: number): ProgressUpdate {
    const elapsed = `still deliberating (${seconds(now - this.startedAt)} s)`;
    const waiting = [...this.inFlight.values()];
    if (waiting.length === 0) return this.next(elapsed, false);
    const byStage = new Map<string, string[]>();
    for (const { stage, who } of waiting) byStage.set(stage, [...(byStage.get(stage) ?? []), who]);
    const parts = [...byStage].map(([stage, names]) => `${stageLabel(stage)} waiting for ${some(names)}`);
    return this.next(`${elapsed}: ${parts.join('; ')}`, false);
  }

  private onCall(event: DeliveredEvent): ProgressUpdate | null {
    const call = event as unknown as DeliveredEvent<ModelProgressPayload>;
    // The title call is not part of the deliberation's plan.
    if (call.stage === 'title') return null;
    const key = `${call.stage}\u0000${String(call.participant)}`;
    const who = participantLabel(call.participant);
    const stage = this.stages.get(call.stage) ?? { started: 0, settled: 0 };
    this.stages.set(call.stage, stage);
    switch (call.state) {
      case 'started':
        if (!this.inFlight.has(key)) stage.started += 1;
        this.inFlight.set(key, { stage: call.stage, who });
        return null;
      case 'retrying':
        return this.next(this.callLine(event), false);
      case 'succeeded':
      case 'failed': {
        if (!this.inFlight.delete(key)) stage.started += 1;
        stage.settled += 1;
        const count = `(${stage.settled}/${Math.max(stage.started, stage.settled)})`;
        return this.next(this.callLine(event, count), true);
      }
      default:
        return null;
    }
  }

  /** A call's line in the describer's words, with its stage's count once it settled. */
  private callLine(event: DeliveredEvent, count: string | null = null): string {
    return describeLine(event, 'mcp', { count }) ?? '';
  }

  private next(message: string, step: boolean): ProgressUpdate {
    if (step) {
      this.settled += 1;
      this.between = 0;
    } else {
      this.between += 1;
    }
    const progress = this.settled + this.between / (this.between + 1);
    if (this.plannedCalls === null) return { progress, message };
    return { progress, total: Math.max(this.plannedCalls + 1, Math.ceil(progress)), message };
  }
}
