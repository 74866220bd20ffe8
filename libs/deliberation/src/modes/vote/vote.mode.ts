import type {
  LabelMap,
  Stage1Response,
  TiebreakResult,
  VoteConfig,
  VoteResponse,
  VoteResult,
  VoteTallyResult,
  VoteWinnerResult,
} from '@conclave/contracts';
import { failure, modeEvent, NO_USAGE, usageOf } from '../../engine/reductions';
import {
  initialAnswers,
  participantKey,
  participantOfKey,
  type SeatedAnswer,
} from '../../shared/participants';
import type {
  CallOutcome,
  DeliberationContext,
  ModeDefinition,
  PlannedCall,
  StageReduction,
  StageRow,
  SuccessfulCall,
} from '../../engine/types';
import { responseLabel, shuffleWithSeed } from '../../shared/labels';
import { buildTitlePrompt } from '../../shared/title';
import { parseVote, tallyVotes } from '../../shared/voting';
import { resolveVoteConfig, VOTE_MAX_MODELS, VOTE_MIN_MODELS, VoteConfigDto } from './vote.config';
import { buildTiebreakPrompt, buildVoteModePrompt } from './vote.prompts';

type Ctx = DeliberationContext<VoteConfig>;

const ORDER = {
  initial_answer: 1,
  vote_label_map: 2,
  vote: 3,
  vote_tally: 4,
  tiebreak: 5,
  vote_winner: 6,
} as const;
const MIN_ANSWERS = 2;
const responseIndex = (label: string) => label.charCodeAt(label.length - 1) - 65;
const CHAIRMAN_KEY = 'chairman';

/** Keyed by roster position, so the same model can stand twice. */
type Answer = SeatedAnswer;
const answers = initialAnswers;

/** 02-vote.md: the answers are anonymized with a shuffled label map, random per deliberation. */
const labelled = (ctx: Ctx) => shuffleWithSeed(answers(ctx.rows), `${ctx.messageId}:vote-labels`);
const labelMapOf = (ordered: Answer[]): LabelMap =>
  Object.fromEntries(ordered.map((a, i) => [responseLabel(i), a.model]));

type StoredTally = Omit<VoteTallyResult, 'votes'> & { winners?: string[] };

function votesFromRows(rows: readonly StageRow[]): VoteResponse[] {
  return rows
    .filter((r) => r.stageType === 'vote')
    .sort((a, b) => (a.participant ?? 0) - (b.participant ?? 0))
    .map((r) => ({
      model: r.model ?? '',
      voteText: r.content,
      votedFor: (r.parsedData as { votedFor: string | null }).votedFor,
      responseTimeMs: r.responseTimeMs ?? 0,
    }));
}

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

function reduceAnswers(outcomes: CallOutcome[]): StageReduction {
  const answered = outcomes.filter((o): o is SuccessfulCall => o.ok);
  const failed = outcomes.filter((o) => !o.ok).map((o) => `${o.model} (${o.ok ? '' : o.error})`);
  if (answered.length < MIN_ANSWERS) {
    return failure(
      answered.length === 0
        ? `All models failed to answer: ${failed.join(', ')}.`
        : `Only ${answered[0].model} answered; a vote needs at least ${MIN_ANSWERS} answers. Failed: ${failed.join(', ')}.`,
    );
  }
  const data: Stage1Response[] = answered.map((c) => ({
    model: c.model,
    response: c.content,
    responseTimeMs: c.responseTimeMs,
  }));
  return {
    rows: answered.map((call): StageRow => ({
      stageType: 'initial_answer',
      stageOrder: ORDER.initial_answer,
      model: call.model,
      role: 'respondent',
      content: call.content,
      parsedData: {},
      ...usageOf(call),
      participant: participantOfKey(call.key),
    })),
    events: [modeEvent('stage1_complete', { data })],
    transition: { kind: 'next', stage: 'vote' },
  };
}

function reduceVotes(ctx: Ctx, outcomes: CallOutcome[]): StageReduction {
  const ordered = labelled(ctx);
  const labels = ordered.map((_, i) => responseLabel(i));
  const labelMap = labelMapOf(ordered);
  const byKey = new Map(outcomes.map((o) => [o.key, o]));
  const voters = answers(ctx.rows);
  const votes = voters.flatMap((v) => {
    const outcome = byKey.get(participantKey(v.participant));
    if (!outcome?.ok) return [];
    const parsed = parseVote(outcome.content);
    return [
      {
        participant: v.participant,
        outcome,
        vote: {
          model: v.model,
          voteText: outcome.content,
          votedFor: parsed && labels.includes(parsed) ? parsed : null,
          responseTimeMs: outcome.responseTimeMs,
        },
      },
    ];
  });
  // Failed voters are excluded and counted as invalid votes (02-vote.md).
  const cast = voters.map((v) => votes.find((x) => x.participant === v.participant)?.vote.votedFor ?? null);
  const tally = tallyVotes(cast, labels);
  const rows: StageRow[] = [
    {
      stageType: 'vote_label_map',
      stageOrder: ORDER.vote_label_map,
      model: null,
      role: null,
      content: JSON.stringify(labelMap),
      parsedData: labelMap,
      ...NO_USAGE,
    },
    ...votes.map(({ participant, outcome, vote }): StageRow => ({
      stageType: 'vote',
      stageOrder: ORDER.vote,
      model: vote.model,
      role: 'voter',
      content: vote.voteText,
      parsedData: { votedFor: vote.votedFor },
      ...usageOf(outcome),
      participant,
    })),
  ];
  if (tally.validVoteCount === 0) return { ...failure('All votes failed to parse.'), rows };
  const result: VoteTallyResult = {
    votes: votes.map((v) => v.vote),
    tallies: tally.tallies,
    validVoteCount: tally.validVoteCount,
    invalidVoteCount: tally.invalidVoteCount,
    isTie: tally.isTie,
    tiedLabels: tally.tiedLabels,
  };
  rows.push({
    stageType: 'vote_tally',
    stageOrder: ORDER.vote_tally,
    model: null,
    role: null,
    content: JSON.stringify({ tallies: tally.tallies, isTie: tally.isTie, tiedLabels: tally.tiedLabels }),
    parsedData: {
      tallies: tally.tallies,
      validVoteCount: tally.validVoteCount,
      invalidVoteCount: tally.invalidVoteCount,
      isTie: tally.isTie,
      tiedLabels: tally.tiedLabels,
    },
    ...NO_USAGE,
  });
  const events = [modeEvent('vote_complete', { data: result })];
  if (tally.isTie) return { rows, events, transition: { kind: 'next', stage: 'tiebreak' } };
  const winner = winnerOf(ctx, tally.winners[0], tally, null);
  rows.push(winnerRow(winner, ordered[labels.indexOf(winner.winnerLabel)].participant));
  events.push(modeEvent('winner_declared', { data: winner }));
  return { rows, events, transition: { kind: 'done', content: winner.winnerResponse } };
}

function reduceTiebreak(ctx: Ctx, outcomes: CallOutcome[]): StageReduction {
  const tally = ctx.rows.find((r) => r.stageType === 'vote_tally')?.parsedData as StoredTally | undefined;
  if (!tally) throw new Error('tiebreak reached without a vote tally');
  const chairman = outcomes[0];
  const named = chairman?.ok ? parseVote(chairman.content) : null;
  // A chairman that fails or names an untied label: the first tied label alphabetically.
  const byChairman = named !== null && tally.tiedLabels.includes(named);
  const tiebreak: TiebreakResult = {
    model: ctx.config.chairmanModel,
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
        model: ctx.config.chairmanModel,
        role: 'chairman',
        content: tiebreak.voteText,
        parsedData: { chosenLabel: tiebreak.chosenLabel, method: tiebreak.method },
        ...(chairman?.ok ? usageOf(chairman) : NO_USAGE),
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

function plan(stage: string, ctx: Ctx): PlannedCall[] {
  const call = (key: string, model: string, content: string): PlannedCall => ({
    key,
    participant: model,
    model,
    messages: [{ role: 'user', content }],
  });
  if (stage === 'answer')
    return ctx.config.models.map((model, i) => call(participantKey(i), model, ctx.question));
  const ordered = labelled(ctx);
  const labeledAnswers = ordered.map((a, i) => ({ label: responseLabel(i), response: a.response }));
  if (stage === 'vote') {
    const prompt = buildVoteModePrompt(ctx.question, labeledAnswers);
    return answers(ctx.rows).map((a) => call(participantKey(a.participant), a.model, prompt));
  }
  if (stage === 'tiebreak') {
    const tally = ctx.rows.find((r) => r.stageType === 'vote_tally')?.parsedData as StoredTally | undefined;
    const tied = labeledAnswers.filter((l) => tally?.tiedLabels.includes(l.label));
    return [call(CHAIRMAN_KEY, ctx.config.chairmanModel, buildTiebreakPrompt(ctx.question, tied))];
  }
  throw new Error(`vote has no stage "${stage}"`);
}

export const voteMode: ModeDefinition<VoteConfig, Partial<VoteResult>> = {
  mode: 'vote',
  multiTurn: false,
  enforcesDeliberationCap: true,
  firstStage: 'answer',
  configSchema: VoteConfigDto,
  resolveConfig: resolveVoteConfig,
  timeoutMs: (config) => config.timeoutMs,

  startEvents(stage, ctx) {
    if (stage === 'answer') {
      return [
        modeEvent('vote_session_start', {
          conversationId: ctx.conversationId,
          messageId: ctx.messageId,
          mode: 'vote',
        }),
        modeEvent('stage1_start'),
      ];
    }
    if (stage === 'vote') return [modeEvent('vote_start', { data: { labelMap: labelMapOf(labelled(ctx)) } })];
    if (stage === 'tiebreak') return [modeEvent('tiebreak_start')];
    return [];
  },

  plan,

  reduce(stage, ctx, outcomes) {
    if (stage === 'answer') return reduceAnswers(outcomes);
    if (stage === 'vote') return reduceVotes(ctx, outcomes);
    if (stage === 'tiebreak') return reduceTiebreak(ctx, outcomes);
    throw new Error(`vote has no stage "${stage}"`);
  },

  titleCall: (ctx) => ({ model: ctx.config.chairmanModel, messages: buildTitlePrompt(ctx.question) }),

  load(rows, _config, title) {
    const result: Partial<VoteResult> = {};
    const list = answers(rows);
    if (list.length > 0)
      result.stage1 = list.map((a) => ({
        model: a.model,
        response: a.response,
        responseTimeMs: a.responseTimeMs,
      }));
    const labelMap = rows.find((r) => r.stageType === 'vote_label_map')?.parsedData as LabelMap | undefined;
    if (labelMap) result.labelMap = labelMap;
    const tally = rows.find((r) => r.stageType === 'vote_tally')?.parsedData as StoredTally | undefined;
    if (tally) {
      result.votes = {
        votes: votesFromRows(rows),
        tallies: tally.tallies,
        validVoteCount: tally.validVoteCount,
        invalidVoteCount: tally.invalidVoteCount,
        isTie: tally.isTie,
        tiedLabels: tally.tiedLabels,
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

  describe(defaults) {
    return {
      mode: 'vote',
      available: true,
      multiTurn: false,
      roster: [
        { role: 'voter', field: 'modeConfig.models', min: VOTE_MIN_MODELS, max: VOTE_MAX_MODELS },
        { role: 'chairman', field: 'modeConfig.chairmanModel', min: 0, max: 1 },
      ],
      defaults: {
        models: defaults.vote.models,
        chairmanModel: defaults.vote.models[0],
        timeoutMs: defaults.timeoutMs,
      },
      options: [
        {
          field: 'timeoutMs',
          type: 'number',
          description: 'per-call timeout (10000-600000 ms)',
          default: defaults.timeoutMs,
        },
      ],
    };
  },
};
