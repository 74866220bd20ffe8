import type {
  DelphiStats,
  EventEnvelope,
  Stage1Response,
  VoteTallyResult,
  VoteWinnerResult,
} from '@conclave/contracts';
import type { Audience, EventReading } from './reading';

/**
 * The words and number formats the event texts share (libs/deliberation/src/event-text and each
 * mode's `<mode>.events.ts`). Plain TypeScript with no imports but the contracts: the web client
 * bundles it.
 */

/** `round_2` → `round 2`, so model lines and round lines read alike. */
export const stageLabel = (stage: string): string => stage.replace(/^round_(\d+)$/, 'round $1');

/**
 * Who made a call, as the event names them: a model id, or where the mode keeps authors anonymous
 * during the run (Delphi panelists) their number, never turned into a model here.
 */
export function participantLabel(participant: unknown, audience: Audience): string {
  if (typeof participant === 'number') {
    if (audience === 'cli') return `#${participant}`;
    if (audience === 'mcp') return `participant #${participant}`;
    return `Panelist ${participant}`;
  }
  if (audience === 'reasoning') return typeof participant === 'string' ? participant : 'A model';
  return String(participant);
}

// Payloads are typed by their event type, but a stored payload may be of another shape than its
// mode document says: the `reasoning` texts read every field defensively.
export type Fields = Record<string, unknown>;
export const isObject = (value: unknown): value is Fields =>
  typeof value === 'object' && value !== null && !Array.isArray(value);
export const str = (value: unknown): string | null => (typeof value === 'string' ? value : null);
export const num = (value: unknown): number | null =>
  typeof value === 'number' && Number.isFinite(value) ? value : null;
export const list = (value: unknown): unknown[] => (Array.isArray(value) ? value : []);
/** An object-valued field, or an empty object. */
export const fields = (value: unknown): Fields => (isObject(value) ? value : {});

/** A one-line form of text from the panel (an error message): whitespace folded, cut short. */
export function oneLine(text: string, max: number): string {
  const folded = text.replace(/\s+/g, ' ').trim();
  return folded.length > max ? `${folded.slice(0, max - 1)}…` : folded;
}

/** A number as people read it: thousands grouped, at most three decimals; `?` for none. */
export function figure(value: unknown): string {
  const n = num(value);
  if (n === null) return '?';
  return n.toLocaleString('en-US', { maximumFractionDigits: Math.abs(n) >= 100 ? 0 : 3 });
}

export const plural = (n: number, one: string, many = `${one}s`): string => `${n} ${n === 1 ? one : many}`;

/** A number to two decimals at most, as the CLI and MCP lines give scores, ranks and statistics. */
export const round2 = (n: number): string => String(Math.round(n * 100) / 100);

/** `[stage2] started` (cli), `stage2 started` (mcp): the plain line of a stage's start or end. */
export function phaseLine(stage: string, phase: 'start' | 'complete', audience: 'cli' | 'mcp'): string {
  const what = phase === 'start' ? 'started' : 'complete';
  return audience === 'cli' ? `[${stageLabel(stage)}] ${what}` : `${stageLabel(stage)} ${what}`;
}

/** The plain line of an event type `<stage>_start|_complete` not otherwise described, or null. */
export function plainPhaseLine(type: string, audience: 'cli' | 'mcp'): string | null {
  const phase = /^(.+)_(start|complete)$/.exec(type);
  return phase ? phaseLine(phase[1], phase[2] as 'start' | 'complete', audience) : null;
}

/** The CLI's and MCP's plain lines of a stage event, for a reading's `cli` and `mcp`. */
export const plainPhase = (stage: string, phase: 'start' | 'complete') => ({
  cli: () => phaseLine(stage, phase, 'cli'),
  mcp: () => phaseLine(stage, phase, 'mcp'),
});

/** A mode's first event: the run itself was announced when it started; no audience gives it a line. */
export const OPENING: EventReading<EventEnvelope> = { cli: null, mcp: null, reasoning: null, web: null };

/** `stage1_complete` (council, vote), `round1_complete` (debate): the answers collected. */
export const answersCollected = (
  stage: string,
): EventReading<EventEnvelope & { data: Stage1Response[] }> => ({
  cli: (e) => `[${stage}] complete: ${e.data.length} answers`,
  mcp: (e) => `${stage} complete: ${e.data.length} answers`,
  reasoning: (e) => `${plural(list(e.data).length, 'answer')} collected.`,
  web: null,
});

/** `vote_complete` (vote, debate): the tally, and the votes by voter. */
export const voteTally: Omit<EventReading<EventEnvelope & { data: VoteTallyResult }>, 'reasoning'> = {
  cli: (e) => `[vote] complete: ${tallyText(e.data)}`,
  mcp: (e) => `vote complete: ${tallyText(e.data)}`,
  web: null,
};

function tallyText(result: VoteTallyResult): string {
  const counts = Object.entries(result.tallies)
    .map(([label, n]) => `${label} ${n}`)
    .join(', ');
  return `${counts || 'no valid vote'}${result.isTie ? ` (tie: ${result.tiedLabels.join(', ')})` : ''}`;
}

/** `vote_complete`'s `reasoning`: who voted for what, and a tie. */
export function votesLines(result: Fields): string[] {
  const votes = list(result.votes)
    .filter(isObject)
    .map((v) => `${str(v.model) ?? '?'} → ${str(v.votedFor) ?? 'no valid vote'}`);
  const lines = votes.length > 0 ? [`Votes: ${votes.join(', ')}.`] : [];
  if (result.isTie === true) lines.push(`Tie between ${list(result.tiedLabels).map(String).join(', ')}.`);
  return lines;
}

/** `winner_declared` (vote, debate). */
export const winnerDeclared: EventReading<
  EventEnvelope & { data: Omit<VoteWinnerResult, 'tiebreakerMethod'> & { tiebreakerMethod?: string } }
> = {
  cli: ({ data }) => {
    const tiebroken = data.tiebroken ? `, tie broken ${data.tiebreakerMethod ?? ''}`.trimEnd() : '';
    return `winner: ${data.winnerModel} (${data.winnerLabel}, ${data.voteCount}/${data.totalVotes} votes${tiebroken})`;
  },
  mcp: ({ data }) =>
    `winner: ${data.winnerModel} (${data.winnerLabel}, ${data.voteCount}/${data.totalVotes} votes)`,
  reasoning: (e) => {
    const winner = fields(e.data);
    const label = str(winner.winnerLabel) ?? '?';
    const model = str(winner.winnerModel);
    const count = `${figure(winner.voteCount)} of ${figure(winner.totalVotes)} votes`;
    return `Winner: ${label}${model ? ` by ${model}` : ''} (${count}${winner.tiebroken === true ? ', after a tiebreak' : ''}).`;
  },
  web: null,
};

/** A Delphi round's statistics in a few words (cli adds the mean; mcp leaves it out). */
export function statsSummary(stats: DelphiStats, withMean: boolean): string {
  if ('median' in stats) {
    const cv = stats.cv === null ? 'undefined' : round2(stats.cv);
    const mean = withMean ? `, mean ${round2(stats.mean)}` : '';
    return `median ${round2(stats.median)}${mean}, cv ${cv}`;
  }
  return `leading "${stats.mode}" (${round2(stats.agreementPercentage)}% agree)`;
}
