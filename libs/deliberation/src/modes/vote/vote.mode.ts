import type {
  LabelMap,
  TiebreakResult,
  VoteConfig,
  VoteResult,
  VoteTallyResult,
  VoteWinnerResult,
} from '@conclave/contracts';
import { failure, modeEvent, NO_USAGE } from '../../engine/reductions';
import { initialAnswers, participantKey, type SeatedAnswer } from '../../shared/participants';
import type {
  CallOutcome,
  DeliberationContext,
  PlannedCall,
  StageReduction,
  StageRow,
} from '../../engine/types';
import {
  answersRoundCalls,
  reduceAnswersRound,
  seatedResponses,
  type AnswersRound,
} from '../../shared/answers-round';
import { openingEvent, promptCall, recordRow, usageOfOutcome } from '../../shared/calls';
import { labelMapOf, responseLabel, shuffleWithSeed } from '../../shared/labels';
import { buildTitlePrompt } from '../../shared/title';
import { ballotRow, castBallots, parseVote, tallyCounts, votesFromRows } from '../../shared/voting';
import { hasAnswer, memberGate, withFallbacks, type CountsAsAnswered } from '../../engine/quorum';
import { defineMode, type StageTable } from '../define-mode';
import { VOTE_MIN_ANSWERS, voteConfig } from './vote.config';
import { voteFacts } from './vote.facts';
import { buildTiebreakPrompt, buildVoteModePrompt } from './vote.prompts';

type Ctx = DeliberationContext<VoteConfig>;
type VoteStage = 'answer' | 'vote' | 'tiebreak';

const ORDER = {
  initial_answer: 1,
  vote_label_map: 2,
  vote: 3,
  vote_tally: 4,
  tiebreak: 5,
  vote_winner: 6,
} as const;
const responseIndex = (label: string) => label.charCodeAt(label.length - 1) - 65;
const CHAIRMAN_KEY = 'chairman';

/** Keyed by roster position, so the same model can stand twice. */
type Answer = SeatedAnswer;

/** 02-vote.md: the answers are anonymized with a shuffled label map, random per deliberation. */
const labelled = (ctx: Ctx) => shuffleWithSeed(initialAnswers(ctx.rows), `${ctx.messageId}:vote-labels`);
const labelMapOfAnswers = (ordered: Answer[]): LabelMap => labelMapOf(ordered.map((a) => a.model));

const ANSWERS: AnswersRound = {
  stageType: 'initial_answer',
  stageOrder: ORDER.initial_answer,
  seated: true,
  event: 'stage1_complete',
  next: 'vote',
  minAnswers: VOTE_MIN_ANSWERS,
  panel: 'models',
  need: `a vote needs at least ${VOTE_MIN_ANSWERS} answers`,
};

type StoredTally = Omit<VoteTallyResult, 'votes'> & { winners?: string[] };
const storedTally = (rows: readonly StageRow[]): StoredTally | undefined =>
  rows.find((r) => r.stageType === 'vote_tally')?.parsedData as StoredTally | undefined;

function winnerOf(
  ctx: Ctx,
  label: string,
  tally: StoredTally,
  method: TiebreakResult['method'] | null,
): VoteWinnerResult {
  const ordered = labelled(ctx);
  const winner = ordered[responseIndex(label)];
  return {
    winnerLabel: label,
    winnerModel: winner.model,
    winnerResponse: winner.response,
    voteCount: tally.tallies[label] ?? 0,
    totalVotes: tally.validVoteCount,
    tiebroken: method !== null,
    ...(method ? { tiebreakerMethod: method } : {}),
  };
}

function winnerRow(winner: VoteWinnerResult, participant: number): StageRow {
  return {
    stageType: 'vote_winner',
    stageOrder: ORDER.vote_winner,
    model: winner.winnerModel,
    role: 'winner',
    content: winner.winnerResponse,
    parsedData: {
      winnerLabel: winner.winnerLabel,
      winnerModel: winner.winnerModel,
      voteCount: winner.voteCount,
      totalVotes: winner.totalVotes,
      tiebroken: winner.tiebroken,
      tiebreakerMethod: winner.tiebreakerMethod ?? null,
    },
    ...NO_USAGE,
    participant,
  };
}

function reduceVotes(ctx: Ctx, outcomes: CallOutcome[]): StageReduction {
  const ordered = labelled(ctx);
  const labels = ordered.map((_, i) => responseLabel(i));
  const labelMap = labelMapOfAnswers(ordered);
  // Failed voters are excluded and counted as invalid votes (02-vote.md).
  const { ballots, tally } = castBallots(initialAnswers(ctx.rows), outcomes, labels);
  const rows: StageRow[] = [
    recordRow('vote_label_map', ORDER.vote_label_map, JSON.stringify(labelMap), labelMap),
    ...ballots.map((ballot) => ballotRow(ballot, 'vote', ORDER.vote)),
  ];
  if (tally.validVoteCount === 0) return { ...failure('All votes failed to parse.'), rows };
  const result: VoteTallyResult = {
    votes: ballots.map((b) => b.vote),
    tallies: tally.tallies,
    ...tallyCounts(tally),
  };
  rows.push(
    recordRow(
      'vote_tally',
      ORDER.vote_tally,
      JSON.stringify({ tallies: tally.tallies, isTie: tally.isTie, tiedLabels: tally.tiedLabels }),
      {
        tallies: tally.tallies,
        ...tallyCounts(tally),
      },
    ),
  );
  const events = [modeEvent('vote_complete', { data: result })];
  if (tally.isTie) return { rows, events, transition: { kind: 'next', stage: 'tiebreak' } };
  const winner = winnerOf(ctx, tally.winners[0], tally, null);
  rows.push(winnerRow(winner, ordered[labels.indexOf(winner.winnerLabel)].participant));
  events.push(modeEvent('winner_declared', { data: winner }));
  return { rows, events, transition: { kind: 'done', content: winner.winnerResponse } };
}

function reduceTiebreak(ctx: Ctx, outcomes: CallOutcome[]): StageReduction {
  const tally = storedTally(ctx.rows);
  if (!tally) throw new Error('tiebreak reached without a vote tally');
  const chairman = outcomes[0];
  const named = chairman?.ok ? parseVote(chairman.content) : null;
  // A chairman that fails or names an untied label: the first tied label alphabetically.
  const byChairman = named !== null && tally.tiedLabels.includes(named);
  const tiebreak: TiebreakResult = {
    model: chairman?.model ?? ctx.config.chairmanModel,
    chosenLabel: byChairman ? (named as string) : [...tally.tiedLabels].sort()[0],
    voteText: chairman?.ok ? chairman.content : '',
    method: byChairman ? 'chairman' : 'alphabetical',
  };
  const winner = winnerOf(ctx, tiebreak.chosenLabel, tally, tiebreak.method);
  const ordered = labelled(ctx);
  return {
    rows: [
      {
        stageType: 'tiebreak',
        stageOrder: ORDER.tiebreak,
        model: tiebreak.model,
        role: 'chairman',
        content: tiebreak.voteText,
        parsedData: { chosenLabel: tiebreak.chosenLabel, method: tiebreak.method },
        ...usageOfOutcome(chairman),
      },
      winnerRow(winner, ordered[responseIndex(winner.winnerLabel)].participant),
    ],
    events: [
      modeEvent('tiebreak_complete', { data: tiebreak }),
      modeEvent('winner_declared', { data: winner }),
    ],
    transition: { kind: 'done', content: winner.winnerResponse },
  };
}

/** A vote the tally counts: parseVote names a label that was shown. */
function readsVote(ctx: Ctx): CountsAsAnswered {
  const labels = labelled(ctx).map((_, i) => responseLabel(i));
  return (outcome) => labels.includes(parseVote(outcome.content) ?? '');
}

function planVotes(ctx: Ctx): PlannedCall[] {
  const prompt = buildVoteModePrompt(
    ctx.question,
    labelled(ctx).map((a, i) => ({ label: responseLabel(i), response: a.response })),
  );
  return initialAnswers(ctx.rows).map((a) => promptCall(participantKey(a.participant), a.model, prompt));
}

function planTiebreak(ctx: Ctx): PlannedCall[] {
  const tally = storedTally(ctx.rows);
  const tied = labelled(ctx)
    .map((a, i) => ({ label: responseLabel(i), response: a.response }))
    .filter((l) => tally?.tiedLabels.includes(l.label));
  return [
    withFallbacks(
      promptCall(CHAIRMAN_KEY, ctx.config.chairmanModel, buildTiebreakPrompt(ctx.question, tied)),
      ctx.config.chairmanFallbacks,
    ),
  ];
}

const stages: StageTable<VoteStage, VoteConfig> = {
  answer: {
    start: (ctx) => [openingEvent('vote_session_start', ctx, { mode: 'vote' }), modeEvent('stage1_start')],
    calls: (ctx) => answersRoundCalls(ANSWERS, ctx.config.models, ctx.question),
    gate: (ctx, calls) => memberGate(ctx.config, calls.length, VOTE_MIN_ANSWERS, hasAnswer),
    reduce: (_ctx, outcomes) => reduceAnswersRound(ANSWERS, outcomes),
  },
  vote: {
    start: (ctx) => [modeEvent('vote_start', { data: { labelMap: labelMapOfAnswers(labelled(ctx)) } })],
    calls: planVotes,
    // Voters that are cut are counted as invalid votes; one readable vote decides (02-vote.md).
    gate: (ctx, calls) => memberGate(ctx.config, calls.length, 1, readsVote(ctx)),
    reduce: reduceVotes,
  },
  tiebreak: {
    start: () => [modeEvent('tiebreak_start')],
    calls: planTiebreak,
    // A chairman that names no tied label passes the tiebreak to its next fallback.
    accepts: (ctx, outcome) => {
      const named = parseVote(outcome.content);
      return named !== null && (storedTally(ctx.rows)?.tiedLabels.includes(named) ?? false);
    },
    reduce: reduceTiebreak,
  },
};

export const voteMode = defineMode<VoteConfig, Partial<VoteResult>, VoteStage>({
  mode: 'vote',
  facts: voteFacts,
  multiTurn: false,
  enforcesDeliberationCap: true,
  config: voteConfig,
  firstStage: 'answer',
  stages,
  titleCall: (ctx) => ({ model: ctx.config.chairmanModel, messages: buildTitlePrompt(ctx.question) }),
  load(rows, _config, title) {
    const result: Partial<VoteResult> = {};
    const stage1 = seatedResponses(rows);
    if (stage1.length > 0) result.stage1 = stage1;
    const labelMap = rows.find((r) => r.stageType === 'vote_label_map')?.parsedData as LabelMap | undefined;
    if (labelMap) result.labelMap = labelMap;
    const tally = storedTally(rows);
    if (tally) {
      result.votes = {
        votes: votesFromRows(rows, 'vote'),
        tallies: tally.tallies,
        ...tallyCounts(tally),
      };
    }
    const tiebreak = rows.find((r) => r.stageType === 'tiebreak');
    if (tiebreak) {
      const data = tiebreak.parsedData as { chosenLabel: string; method: TiebreakResult['method'] };
      result.tiebreak = {
        model: tiebreak.model ?? '',
        chosenLabel: data.chosenLabel,
        voteText: tiebreak.content,
        method: data.method,
      };
    }
    const winner = rows.find((r) => r.stageType === 'vote_winner');
    if (winner) {
      const data = winner.parsedData as Omit<VoteWinnerResult, 'winnerResponse' | 'tiebreakerMethod'> & {
        tiebreakerMethod: TiebreakResult['method'] | null;
      };
      result.winner = {
        winnerLabel: data.winnerLabel,
        winnerModel: data.winnerModel,
        winnerResponse: winner.content,
        voteCount: data.voteCount,
        totalVotes: data.totalVotes,
        tiebroken: data.tiebroken,
        ...(data.tiebreakerMethod ? { tiebreakerMethod: data.tiebreakerMethod } : {}),
      };
    }
    if (title) result.title = title;
    return result;
  },

  headline: (result) => ({
    answer: result.winner?.winnerResponse ?? null,
    details: {
      winnerModel: result.winner?.winnerModel ?? null,
      voteCount: result.winner?.voteCount ?? null,
      totalVotes: result.winner?.totalVotes ?? null,
      tiebroken: result.winner?.tiebroken ?? null,
      tiebreakerMethod: result.winner?.tiebreakerMethod ?? null,
    },
  }),
});
