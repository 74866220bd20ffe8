import type { VoteResponse } from '@conclave/contracts';
import type { CallOutcome, StageRow, SuccessfulCall } from '../engine/types';
import { callRow } from './calls';
import { fencedResponses } from './fence';
import { participantKey } from './participants';

/** The vote parser and tally of 04-debate.md, shared by Debate and Vote mode (02-vote.md). */

const VOTE = /VOTE[ \t]*(?:\*+[ \t]*)?:[ \t]*(?:\*+[ \t]*)?Response[ \t]+([A-Z])\b/gi;
const ANY_LABEL = /Response[ \t]+([A-Z])\b/gi;

/** The last `VOTE: Response X`, else the last `Response X`, else null. */
export function parseVote(text: string): string | null {
  const votes = [...text.matchAll(VOTE)];
  const matches = votes.length > 0 ? votes : [...text.matchAll(ANY_LABEL)];
  const last = matches.at(-1);
  return last ? `Response ${last[1].toUpperCase()}` : null;
}

/**
 * Plurality over the labels that exist; votes for anything else, and votes that did not parse,
 * count as invalid. Tied leaders are listed alphabetically, so the first is the alphabetical
 * tiebreak's winner.
 */
export function tallyVotes(votedFor: readonly (string | null)[], labels: readonly string[]) {
  const valid = votedFor.filter((v): v is string => v !== null && labels.includes(v));
  const tallies: Record<string, number> = {};
  for (const label of [...valid].sort()) tallies[label] = (tallies[label] ?? 0) + 1;
  const most = Math.max(0, ...Object.values(tallies));
  const winners = Object.keys(tallies)
    .filter((label) => tallies[label] === most)
    .sort();
  return {
    tallies,
    validVoteCount: valid.length,
    invalidVoteCount: votedFor.length - valid.length,
    isTie: winners.length > 1,
    winners,
    tiedLabels: winners.length > 1 ? winners : [],
  };
}

/** A tally's counts, as a vote's result and its stored tally state them (after the votes and tallies). */
export const tallyCounts = (tally: {
  validVoteCount: number;
  invalidVoteCount: number;
  isTie: boolean;
  tiedLabels: string[];
}) => ({
  validVoteCount: tally.validVoteCount,
  invalidVoteCount: tally.invalidVoteCount,
  isTie: tally.isTie,
  tiedLabels: tally.tiedLabels,
});

/** A vote a panelist cast: its call, and the label it names if that label was shown, else null. */
export interface Ballot {
  participant: number;
  call: SuccessfulCall;
  vote: VoteResponse;
}

/**
 * The ballots of a vote among `voters` (keyed by roster position) and their tally. A voter whose
 * call failed casts no ballot and counts as an invalid vote, like one naming no shown label.
 */
export function castBallots(
  voters: readonly { participant: number; model: string }[],
  outcomes: readonly CallOutcome[],
  labels: readonly string[],
) {
  const byKey = new Map(outcomes.map((o) => [o.key, o]));
  const ballots = voters.flatMap((voter): Ballot[] => {
    const call = byKey.get(participantKey(voter.participant));
    if (!call?.ok) return [];
    const parsed = parseVote(call.content);
    const votedFor = parsed && labels.includes(parsed) ? parsed : null;
    const vote = {
      model: voter.model,
      voteText: call.content,
      votedFor,
      responseTimeMs: call.responseTimeMs,
    };
    return [{ participant: voter.participant, call, vote }];
  });
  const cast = voters.map((v) => ballots.find((b) => b.participant === v.participant)?.vote.votedFor ?? null);
  return { ballots, tally: tallyVotes(cast, labels) };
}

/** The row a ballot is stored as. */
export const ballotRow = (
  { participant, call, vote }: Ballot,
  stageType: string,
  stageOrder: number,
): StageRow => ({
  ...callRow(stageType, stageOrder, 'voter', call, { votedFor: vote.votedFor }),
  participant,
});

/** The votes stored as `stageType` rows, in roster order. */
export function votesFromRows(rows: readonly StageRow[], stageType: string): VoteResponse[] {
  return rows
    .filter((r) => r.stageType === stageType)
    .sort((a, b) => (a.participant ?? 0) - (b.participant ?? 0))
    .map((r) => ({
      model: r.model ?? '',
      voteText: r.content,
      votedFor: (r.parsedData as { votedFor: string | null }).votedFor,
      responseTimeMs: r.responseTimeMs ?? 0,
    }));
}

/**
 * 04-debate.md's "Vote-on-Revised Prompt"; Vote mode gives it another first sentence (02-vote.md).
 * Containment layer (shared/fence.ts): the question and each response are fenced and declared
 * data, so a response that ends in "VOTE: Response B" is only a response.
 */
export function buildVotePrompt(
  opening: string,
  userQuery: string,
  labeled: { label: string; response: string }[],
  seed = '',
): string {
  return `${opening}

${fencedResponses(userQuery, labeled, `${seed}:vote`)}
Consider: accuracy, completeness, clarity, helpfulness, and practical value.

You MUST end your response with your vote in this exact format:
VOTE: Response X

where X is the letter of your chosen response. You may provide brief reasoning before the vote, but the last line MUST be your vote.`;
}
