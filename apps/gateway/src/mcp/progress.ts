import {
  resumedLine,
  TERMINAL_EVENT_TYPES,
  type DeliveredEvent,
  type DelphiStats,
  type ForemanReport,
  type JurorAssessment,
  type JurorSummary,
  type ModelProgressPayload,
  type RevisionSummary,
  type Stage2Metadata,
  type Stage3Response,
  type TiebreakResult,
  type VoteTallyResult,
  type VoteWinnerResult,
} from '@conclave/contracts';

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

/** `round_2` → `round 2`, so model lines and round lines read alike. */
export const stageLabel = (stage: string): string => stage.replace(/^round_(\d+)$/, 'round $1');

/**
 * Who made a call, as the event names them: a model id, or `participant #n` where the mode keeps
 * authors anonymous during the run (Delphi panelists): the index is never turned into a model here.
 */
export const participantLabel = (participant: string | number): string =>
  typeof participant === 'number' ? `participant #${participant}` : participant;

type With<P extends object> = DeliveredEvent & P;
/** Events arrive untyped; each describer knows the payload of its own event type. */
const payloadOf = <P extends object>(event: DeliveredEvent): With<P> => event as unknown as With<P>;

const round2 = (n: number): string => String(Math.round(n * 100) / 100);

function statsSummary(stats: DelphiStats): string {
  if ('median' in stats) {
    const cv = stats.cv === null ? 'undefined' : round2(stats.cv);
    return `median ${round2(stats.median)}, cv ${cv}`;
  }
  return `leading "${stats.mode}" (${round2(stats.agreementPercentage)}% agree)`;
}

/** The first event of a mode: the run itself was announced when it started. */
const OPENINGS = new Set(['jury_start', 'debate_start', 'delphi_start', 'vote_session_start']);

/** Mode events whose payload is worth a detail; any other `<stage>_start|_complete` gets a plain line. */
const DESCRIBERS: Record<string, (event: DeliveredEvent) => string> = {
  stage1_complete: (e) => `stage1 complete: ${payloadOf<{ data: unknown[] }>(e).data.length} answers`,
  round1_complete: (e) => `round1 complete: ${payloadOf<{ data: unknown[] }>(e).data.length} answers`,
  stage2_complete: (e) => {
    const { metadata } = payloadOf<{ metadata: Stage2Metadata }>(e);
    const ranked = metadata.aggregateRankings.map((r) => `${r.model} ${round2(r.averageRank)}`).join(', ');
    return `stage2 complete: average ranks ${ranked || '(no ranking could be parsed)'}`;
  },
  stage3_complete: (e) =>
    `stage3 complete: synthesis by ${payloadOf<{ data: Stage3Response }>(e).data.model}`,
  juror_complete: (e) => {
    const { data } = payloadOf<{ data: JurorAssessment }>(e);
    const average = data.average !== null ? ` (average ${round2(data.average)})` : '';
    return `juror ${data.model}: ${data.verdict ?? 'no verdict'}${average}`;
  },
  all_jurors_complete: (e) => {
    const { data } = payloadOf<{ data: JurorSummary }>(e);
    const { approve, revise, reject } = data.voteTally;
    return `jurors complete: majority ${data.majorityVerdict} (approve ${approve}, revise ${revise}, reject ${reject})`;
  },
  verdict_complete: (e) => {
    const { data } = payloadOf<{ data: ForemanReport }>(e);
    return `verdict complete: ${data.finalVerdict} (foreman ${data.model})`;
  },
  revision_complete: (e) => {
    const { summary } = payloadOf<{ data: { summary: RevisionSummary } }>(e).data;
    return `revision complete: ${summary.revised} revised, ${summary.stood} stood, ${summary.merged} merged`;
  },
  vote_complete: (e) => {
    const { data } = payloadOf<{ data: VoteTallyResult }>(e);
    const counts = Object.entries(data.tallies)
      .map(([label, n]) => `${label} ${n}`)
      .join(', ');
    const tie = data.isTie ? ` (tie: ${data.tiedLabels.join(', ')})` : '';
    return `vote complete: ${counts || 'no valid vote'}${tie}`;
  },
  tiebreak_complete: (e) => {
    const { data } = payloadOf<{ data: TiebreakResult }>(e);
    return `tiebreak complete: ${data.chosenLabel} (${data.method})`;
  },
  winner_declared: (e) => {
    const { data } = payloadOf<{ data: VoteWinnerResult }>(e);
    return `winner: ${data.winnerModel} (${data.winnerLabel}, ${data.voteCount}/${data.totalVotes} votes)`;
  },
  classify_complete: (e) => {
    const { data } = payloadOf<{ data: { type: string } }>(e);
    return `classified as a ${data.type} question`;
  },
  round_start: (e) => `round ${payloadOf<{ round: number }>(e).round} started`,
  round_complete: (e) => {
    const { round, data } = payloadOf<{ round: number; data: { stats: DelphiStats } }>(e);
    return `round ${round} complete: ${statsSummary(data.stats)}`;
  },
  convergence_reached: (e) => `converged in round ${payloadOf<{ round: number }>(e).round}`,
  max_rounds_reached: (e) => `no convergence by round ${payloadOf<{ round: number }>(e).round}`,
  synthesis_complete: () => 'synthesis complete: the facilitator wrote the report',
  title_complete: () => 'title written',
  complete: () => 'complete',
  error: (e) => `failed: ${payloadOf<{ message: string }>(e).message}`,
  cancelled: (e) => `cancelled: ${payloadOf<{ reason: string }>(e).reason}`,
  resumed: (e) => resumedLine(e),
};

/**
 * The line a mode event (not `model_progress`) is reported with, or null for an event not worth
 * one. Only what the event itself carries is said: nothing a mode hides during the run.
 */
export function describeModeEvent(event: DeliveredEvent): string | null {
  if (OPENINGS.has(event.type)) return null;
  const describer = DESCRIBERS[event.type];
  if (describer) {
    try {
      return describer(event);
    } catch {
      // a payload of another shape than its mode document says: the plain line below
    }
  }
  const stage = /^(.+)_(start|complete)$/.exec(event.type);
  if (stage) return `${stageLabel(stage[1])} ${stage[2] === 'start' ? 'started' : 'complete'}`;
  return null;
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
    if (event.type === 'model_progress') return this.onCall(payloadOf<ModelProgressPayload>(event));
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

  private onCall(call: ModelProgressPayload): ProgressUpdate | null {
    // The title call is not part of the deliberation's plan.
    if (call.stage === 'title') return null;
    const key = `${call.stage}\u0000${String(call.participant)}`;
    const who = participantLabel(call.participant);
    const stage = this.stages.get(call.stage) ?? { started: 0, settled: 0 };
    this.stages.set(call.stage, stage);
    const label = stageLabel(call.stage);
    switch (call.state) {
      case 'started':
        if (!this.inFlight.has(key)) stage.started += 1;
        this.inFlight.set(key, { stage: call.stage, who });
        return null;
      case 'retrying':
        return this.next(`${label}: ${who} retrying (${call.error ?? 'transient error'})`, false);
      case 'succeeded':
      case 'failed': {
        if (!this.inFlight.delete(key)) stage.started += 1;
        stage.settled += 1;
        const count = `(${stage.settled}/${Math.max(stage.started, stage.settled)})`;
        const how = call.state === 'succeeded' ? 'answered' : 'failed';
        const why = call.state === 'failed' ? `: ${call.error ?? 'unknown error'}` : '';
        return this.next(`${label}: ${who} ${how} ${count}${why}`, true);
      }
      default:
        return null;
    }
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
