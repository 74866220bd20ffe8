import type {
  DelphiClassification,
  DelphiReport,
  DelphiStats,
  DeliveredEvent,
  ForemanReport,
  JurorAssessment,
  JurorSummary,
  ModelProgressPayload,
  ResumedPayload,
  RevisionSummary,
  Stage1Response,
  Stage2Metadata,
  Stage3Response,
  TiebreakResult,
  VoteTallyResult,
  VoteWinnerResult,
} from '@conclave/contracts';
import { RESUME_REASON_TEXT } from '@conclave/contracts';

type Describer = (event: DeliveredEvent) => string | null;
type With<P extends object> = DeliveredEvent<P>;

/** Events arrive untyped; each describer knows the payload of its own event type. */
const payloadOf = <P extends object>(event: DeliveredEvent): With<P> => event as unknown as With<P>;

const round2 = (n: number): number => Math.round(n * 100) / 100;

/** `round_2` → `round 2`, so model lines and round lines read alike. */
export const stageLabel = (stage: string): string => stage.replace(/^round_(\d+)$/, 'round $1');

/** Who made a call: its model, or `#n` where the mode keeps authors anonymous (Delphi panelists). */
export const participantLabel = (participant: string | number): string =>
  typeof participant === 'number' ? `#${participant}` : participant;

function modelProgress(event: With<ModelProgressPayload>): string {
  const head = `[${stageLabel(event.stage)}] ${participantLabel(event.participant)}`;
  const took = event.responseTimeMs !== undefined ? ` (${event.responseTimeMs} ms)` : '';
  switch (event.state) {
    case 'succeeded':
      return `${head} succeeded${took}`;
    case 'failed':
      return `${head} failed${took}: ${event.error ?? 'unknown error'}`;
    case 'retrying':
      return `${head} retrying: ${event.error ?? 'transient error'}`;
    default:
      return `${head} started`;
  }
}

const answers = (stage: string) => (event: DeliveredEvent) =>
  `[${stage}] complete: ${payloadOf<{ data: Stage1Response[] }>(event).data.length} answers`;

function rankings(event: DeliveredEvent): string {
  const { metadata } = payloadOf<{ metadata: Stage2Metadata }>(event);
  const ranked = metadata.aggregateRankings.map((r) => `${r.model} ${round2(r.averageRank)}`).join(', ');
  return `[stage2] complete: ${ranked || 'no ranking could be parsed'}`;
}

function juror(event: DeliveredEvent): string {
  const { data } = payloadOf<{ data: JurorAssessment }>(event);
  const average = data.average !== null ? ` (average ${round2(data.average)})` : '';
  return `[deliberation] juror ${data.model}: ${data.verdict ?? 'no verdict'}${average}`;
}

function jurySummary(event: DeliveredEvent): string {
  const { data } = payloadOf<{ data: JurorSummary }>(event);
  const { approve, revise, reject } = data.voteTally;
  return `[deliberation] complete: majority ${data.majorityVerdict} (approve ${approve}, revise ${revise}, reject ${reject})`;
}

function tally(event: DeliveredEvent): string {
  const { data } = payloadOf<{ data: VoteTallyResult }>(event);
  const counts = Object.entries(data.tallies)
    .map(([label, n]) => `${label} ${n}`)
    .join(', ');
  return `[vote] complete: ${counts || 'no valid vote'}${data.isTie ? ` (tie: ${data.tiedLabels.join(', ')})` : ''}`;
}

function winner(event: DeliveredEvent): string {
  const { data } = payloadOf<{ data: VoteWinnerResult }>(event);
  const tiebroken = data.tiebroken ? `, tie broken ${data.tiebreakerMethod ?? ''}`.trimEnd() : '';
  return `winner: ${data.winnerModel} (${data.winnerLabel}, ${data.voteCount}/${data.totalVotes} votes${tiebroken})`;
}

function statsSummary(stats: DelphiStats): string {
  if ('median' in stats)
    return `median ${round2(stats.median)}, mean ${round2(stats.mean)}, cv ${stats.cv === null ? 'undefined' : round2(stats.cv)}`;
  return `leading "${stats.mode}" (${round2(stats.agreementPercentage)}% agree)`;
}

function delphiRound(event: DeliveredEvent): string {
  const { round, data } = payloadOf<{ round: number; data: { stats: DelphiStats; converged: boolean } }>(
    event,
  );
  return `[round ${round}] complete: ${statsSummary(data.stats)}${data.converged ? ', converged' : ''}`;
}

const DESCRIBERS: Record<string, Describer> = {
  model_progress: (e) => modelProgress(payloadOf<ModelProgressPayload>(e)),
  // The first event of a mode: the CLI has said that the deliberation started.
  jury_start: () => null,
  debate_start: () => null,
  delphi_start: () => null,
  vote_session_start: () => null,
  stage1_complete: answers('stage1'),
  round1_complete: answers('round1'),
  stage2_complete: rankings,
  stage3_complete: (e) =>
    `[stage3] complete: synthesis by ${payloadOf<{ data: Stage3Response }>(e).data.model}`,
  juror_complete: juror,
  all_jurors_complete: jurySummary,
  verdict_complete: (e) => {
    const { data } = payloadOf<{ data: ForemanReport }>(e);
    return `[verdict] complete: ${data.finalVerdict} (foreman ${data.model})`;
  },
  revision_complete: (e) => {
    const { summary } = payloadOf<{ data: { summary: RevisionSummary } }>(e).data;
    return `[revision] complete: ${summary.revised} revised, ${summary.stood} stood, ${summary.merged} merged`;
  },
  vote_complete: tally,
  tiebreak_complete: (e) => {
    const { data } = payloadOf<{ data: TiebreakResult }>(e);
    return `[tiebreak] complete: ${data.chosenLabel} (${data.method})`;
  },
  winner_declared: winner,
  classify_complete: (e) => {
    const { data } = payloadOf<{ data: DelphiClassification }>(e);
    return `[classify] complete: ${data.type} question${data.options ? ` (${data.options.join(' | ')})` : ''}`;
  },
  round_start: (e) => `[round ${payloadOf<{ round: number }>(e).round}] started`,
  round_complete: delphiRound,
  convergence_reached: (e) => `converged in round ${payloadOf<{ round: number }>(e).round}`,
  max_rounds_reached: (e) => `no convergence by round ${payloadOf<{ round: number }>(e).round}`,
  synthesis_complete: (e) => {
    const { data } = payloadOf<{ data: DelphiReport }>(e);
    return `[synthesis] complete: final value ${typeof data.finalValue === 'number' ? round2(data.finalValue) : data.finalValue} (facilitator ${data.facilitatorModel})`;
  },
  title_complete: (e) => `title: ${payloadOf<{ data: { title: string } }>(e).data.title}`,
  complete: () => 'complete',
  // Printed as `error: …` (or the cancellation's reason) by whoever follows the deliberation.
  error: () => null,
  cancelled: () => null,
  // An extension event: the stage was interrupted (a worker stopped, the queue was lost) and runs again.
  resumed: (e) => {
    const { stage, reason } = payloadOf<ResumedPayload>(e);
    return `[${stageLabel(stage)}] resuming (${RESUME_REASON_TEXT[reason] ?? 'interrupted'})`;
  },
};

/** One progress line for an event, or null for events not worth a line. */
export function describeEvent(event: DeliveredEvent): string | null {
  const describe = DESCRIBERS[event.type];
  if (describe) return describe(event);
  const phase = /^(.+)_(start|complete)$/.exec(event.type);
  if (phase) return `[${stageLabel(phase[1])}] ${phase[2] === 'start' ? 'started' : 'complete'}`;
  return null;
}
