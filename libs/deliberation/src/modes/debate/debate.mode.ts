import type {
  DebateConfig,
  DebateResult,
  DebateVoteResult,
  DebateWinnerResult,
  LabelMap,
  RevisionDecision,
  RevisionResponse,
  RevisionSummary,
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
import { hasAnswer, memberGate, type CountsAsAnswered } from '../../engine/quorum';
import { defineMode, type StageTable } from '../define-mode';
import { DEBATE_MIN_ANSWERS, debateConfig } from './debate.config';
import { debateFacts } from './debate.facts';
import { parseRevision, revisedResponseOf, wordCount } from './debate.parse';
import { buildRevisionPrompt, buildVoteOnRevisedPrompt } from './debate.prompts';

type Ctx = DeliberationContext<DebateConfig>;
type DebateStage = 'round1' | 'revision' | 'vote';

const ORDER = {
  round1_label_map: 0,
  initial_answer: 1,
  revision: 2,
  revision_summary: 3,
  revised_label_map: 4,
  debate_vote: 5,
  debate_vote_tally: 6,
  debate_winner: 7,
} as const;

/** Models may repeat in a debate: debaters are told apart by roster position. */
type Debater = SeatedAnswer;

interface Revised extends RevisionResponse {
  participant: number;
}

/** Round 1 labels follow the roster; the vote's are shuffled per deliberation (§"Label Map Strategy"). */
const round1Order = (list: Debater[]) => list;
const voteOrder = (list: Debater[], messageId: string) =>
  shuffleWithSeed(list, `${messageId}:revised-labels`);

const labelMap = (ordered: readonly { model: string }[]): LabelMap => labelMapOf(ordered.map((d) => d.model));

function revisionOf(debater: Debater, outcome: CallOutcome | undefined): Revised {
  const text = outcome?.ok ? outcome.content : null;
  const parsed = text === null ? null : parseRevision(text);
  const revisedResponse = text === null ? debater.response : revisedResponseOf(text, debater.response);
  return {
    participant: debater.participant,
    model: debater.model,
    decision: parsed?.decision ?? null,
    reasoning: parsed?.reasoning ?? null,
    originalResponse: debater.response,
    revisedResponse,
    originalWordCount: wordCount(debater.response),
    revisedWordCount: wordCount(revisedResponse),
    responseTimeMs: outcome?.responseTimeMs ?? 0,
    parseSuccess: parsed?.decision != null,
  };
}

function summarize(revisions: readonly RevisionResponse[]): RevisionSummary {
  const count = (decision: RevisionDecision | null) =>
    revisions.filter((r) => r.decision === decision).length;
  return {
    totalModels: revisions.length,
    revised: count('REVISE'),
    stood: count('STAND'),
    merged: count('MERGE'),
    parseFailed: count(null),
  };
}

interface RevisionParsedData {
  decision: RevisionDecision | null;
  reasoning: string | null;
  originalWordCount: number;
  revisedWordCount: number;
  parseSuccess: boolean;
}

function revisionsFromRows(rows: readonly StageRow[]): Revised[] {
  const originals = new Map(initialAnswers(rows).map((d) => [d.participant, d]));
  return rows
    .filter((r) => r.stageType === 'revision')
    .sort((a, b) => (a.participant ?? 0) - (b.participant ?? 0))
    .map((r) => {
      const data = r.parsedData as unknown as RevisionParsedData;
      const original = originals.get(r.participant ?? 0)?.response ?? '';
      return {
        participant: r.participant ?? 0,
        model: r.model ?? '',
        decision: data.decision,
        reasoning: data.reasoning,
        originalResponse: original,
        revisedResponse: revisedResponseOf(r.content, original),
        originalWordCount: data.originalWordCount,
        revisedWordCount: data.revisedWordCount,
        responseTimeMs: r.responseTimeMs ?? 0,
        parseSuccess: data.parseSuccess,
      };
    });
}

const withoutParticipant = ({ participant: _p, ...revision }: Revised): RevisionResponse => revision;
const rowData = (rows: readonly StageRow[], type: string) =>
  rows.find((r) => r.stageType === type)?.parsedData;

const ROUND1: AnswersRound = {
  stageType: 'initial_answer',
  stageOrder: ORDER.initial_answer,
  seated: true,
  parsedData: (call) => ({ responseTimeMs: call.responseTimeMs }),
  leadingRows: (answered) => {
    const labels = labelMap(answered);
    return [recordRow('round1_label_map', ORDER.round1_label_map, JSON.stringify(labels), labels)];
  },
  event: 'round1_complete',
  next: 'revision',
  minAnswers: DEBATE_MIN_ANSWERS,
  panel: 'debate models',
  need: `a debate needs at least ${DEBATE_MIN_ANSWERS}`,
};

function reduceRevision(ctx: Ctx, outcomes: CallOutcome[]): StageReduction {
  const byKey = new Map(outcomes.map((o) => [o.key, o]));
  const list = initialAnswers(ctx.rows);
  const revisions = list.map((d) => revisionOf(d, byKey.get(participantKey(d.participant))));
  const summary = summarize(revisions);
  const revisedLabels = labelMap(voteOrder(list, ctx.messageId));
  const rows: StageRow[] = [
    ...revisions.map((revision): StageRow => {
      const outcome = byKey.get(participantKey(revision.participant));
      return {
        stageType: 'revision',
        stageOrder: ORDER.revision,
        model: revision.model,
        role: 'debater',
        // A failed call leaves the original answer, which then stands in as the revision.
        content: outcome?.ok ? outcome.content : revision.originalResponse,
        parsedData: {
          decision: revision.decision,
          reasoning: revision.reasoning,
          originalWordCount: revision.originalWordCount,
          revisedWordCount: revision.revisedWordCount,
          parseSuccess: revision.parseSuccess,
        },
        ...usageOfOutcome(outcome),
        participant: revision.participant,
      };
    }),
    recordRow('revision_summary', ORDER.revision_summary, JSON.stringify(summary), { ...summary }),
    recordRow('revised_label_map', ORDER.revised_label_map, JSON.stringify(revisedLabels), revisedLabels),
  ];
  return {
    rows,
    events: [
      modeEvent('revision_complete', { data: { revisions: revisions.map(withoutParticipant), summary } }),
    ],
    transition: { kind: 'next', stage: 'vote' },
  };
}

function reduceVote(ctx: Ctx, outcomes: CallOutcome[]): StageReduction {
  const list = initialAnswers(ctx.rows);
  const ordered = voteOrder(list, ctx.messageId);
  const labels = ordered.map((_, i) => responseLabel(i));
  const revisedLabelToModel = labelMap(ordered);
  const revisions = new Map(revisionsFromRows(ctx.rows).map((r) => [r.participant, r]));
  // Failed calls are votes that did not count, like unparseable ones.
  const { ballots, tally } = castBallots(list, outcomes, labels);
  const voteRows = ballots.map((ballot) => ballotRow(ballot, 'debate_vote', ORDER.debate_vote));
  if (tally.validVoteCount === 0) return { ...failure('All votes failed to parse.'), rows: voteRows };

  const winnerLabel = tally.winners[0];
  const winnerDebater = ordered[labels.indexOf(winnerLabel)];
  const winnerRevision = revisions.get(winnerDebater.participant);
  const tiebroken = tally.isTie;
  const winner: DebateWinnerResult = {
    winnerLabel,
    winnerModel: winnerDebater.model,
    winnerResponse: winnerRevision?.revisedResponse ?? winnerDebater.response,
    winnerDecision: winnerRevision?.decision ?? null,
    voteCount: tally.tallies[winnerLabel],
    totalVotes: tally.validVoteCount,
    tiebroken,
    ...(tiebroken ? { tiebreakerMethod: 'alphabetical' as const } : {}),
  };
  const voteResult: DebateVoteResult = {
    votes: ballots.map((b) => b.vote),
    tallies: tally.tallies,
    revisedLabelToModel,
    ...tallyCounts(tally),
  };
  const rows: StageRow[] = [
    ...voteRows,
    recordRow(
      'debate_vote_tally',
      ORDER.debate_vote_tally,
      JSON.stringify({ tallies: tally.tallies, isTie: tally.isTie, winners: tally.winners }),
      { ...tally },
    ),
    {
      stageType: 'debate_winner',
      stageOrder: ORDER.debate_winner,
      model: winner.winnerModel,
      role: 'winner',
      content: winner.winnerResponse,
      parsedData: {
        winnerLabel,
        winnerModel: winner.winnerModel,
        winnerDecision: winner.winnerDecision,
        voteCount: winner.voteCount,
        totalVotes: winner.totalVotes,
        tiebroken,
      },
      ...NO_USAGE,
      participant: winnerDebater.participant,
    },
  ];
  return {
    rows,
    events: [
      modeEvent('vote_complete', { data: voteResult }),
      modeEvent('winner_declared', { data: winner }),
    ],
    transition: { kind: 'done', content: winner.winnerResponse },
  };
}

function planRevision(ctx: Ctx): PlannedCall[] {
  const labeled = round1Order(initialAnswers(ctx.rows)).map((d, i) => ({
    debater: d,
    label: responseLabel(i),
  }));
  return labeled.map(({ debater }) =>
    promptCall(
      participantKey(debater.participant),
      debater.model,
      buildRevisionPrompt({
        userQuery: ctx.question,
        yourOriginalResponse: debater.response,
        otherResponses: labeled
          .filter((l) => l.debater.participant !== debater.participant)
          .map((l) => ({ label: l.label, response: l.debater.response })),
      }),
    ),
  );
}

/** A vote the tally counts: parseVote names a label of the revised answers. */
function readsVote(ctx: Ctx): CountsAsAnswered {
  const labels = voteOrder(initialAnswers(ctx.rows), ctx.messageId).map((_, i) => responseLabel(i));
  return (outcome) => labels.includes(parseVote(outcome.content) ?? '');
}

function planVote(ctx: Ctx): PlannedCall[] {
  const list = initialAnswers(ctx.rows);
  const revisions = new Map(revisionsFromRows(ctx.rows).map((r) => [r.participant, r.revisedResponse]));
  const prompt = buildVoteOnRevisedPrompt(
    ctx.question,
    voteOrder(list, ctx.messageId).map((d, i) => ({
      label: responseLabel(i),
      response: revisions.get(d.participant) ?? d.response,
    })),
  );
  return list.map((d) => promptCall(participantKey(d.participant), d.model, prompt));
}

const stages: StageTable<DebateStage, DebateConfig> = {
  round1: {
    start: (ctx) => [openingEvent('debate_start', ctx, { mode: 'debate' }), modeEvent('round1_start')],
    calls: (ctx) => answersRoundCalls(ROUND1, ctx.config.models, ctx.question),
    gate: (ctx, calls) => memberGate(ctx.config, calls.length, DEBATE_MIN_ANSWERS, hasAnswer),
    reduce: (_ctx, outcomes) => reduceAnswersRound(ROUND1, outcomes),
  },
  revision: {
    start: (ctx) => [
      modeEvent('revision_start', { data: { labelMap: rowData(ctx.rows, 'round1_label_map') } }),
    ],
    calls: planRevision,
    // A debater cut here keeps its first answer (04-debate.md §F, a failed revision).
    gate: (ctx, calls) => memberGate(ctx.config, calls.length, 1, hasAnswer),
    reduce: reduceRevision,
  },
  vote: {
    start: (ctx) => [
      modeEvent('vote_start', { data: { revisedLabelMap: rowData(ctx.rows, 'revised_label_map') } }),
    ],
    calls: planVote,
    // A cut voter's vote is missing, as a failed one's (invalidVoteCount).
    gate: (ctx, calls) => memberGate(ctx.config, calls.length, 1, readsVote(ctx)),
    reduce: reduceVote,
  },
};

export const debateMode = defineMode<DebateConfig, Partial<DebateResult>, DebateStage>({
  mode: 'debate',
  facts: debateFacts,
  multiTurn: false,
  enforcesDeliberationCap: true,
  config: debateConfig,
  firstStage: 'round1',
  stages,

  titleCall: (ctx) => ({ model: ctx.config.models[0], messages: buildTitlePrompt(ctx.question) }),

  load(rows, _config, title) {
    const result: Partial<DebateResult> = {};
    const round1 = seatedResponses(rows);
    if (round1.length > 0) {
      result.round1 = round1;
      result.round1LabelMap = rowData(rows, 'round1_label_map') as LabelMap;
    }
    const summary = rowData(rows, 'revision_summary');
    if (summary) {
      result.revisions = revisionsFromRows(rows).map(withoutParticipant);
      result.revisionSummary = summary as unknown as RevisionSummary;
      result.revisedLabelMap = rowData(rows, 'revised_label_map') as LabelMap;
    }
    const tally = rowData(rows, 'debate_vote_tally') as
      (Omit<DebateVoteResult, 'votes' | 'revisedLabelToModel'> & { winners: string[] }) | undefined;
    if (tally && result.revisedLabelMap) {
      result.votes = {
        votes: votesFromRows(rows, 'debate_vote'),
        tallies: tally.tallies,
        revisedLabelToModel: result.revisedLabelMap,
        ...tallyCounts(tally),
      };
    }
    const winnerRow = rows.find((r) => r.stageType === 'debate_winner');
    if (winnerRow) {
      const data = winnerRow.parsedData as unknown as Omit<DebateWinnerResult, 'winnerResponse'>;
      result.winner = {
        winnerLabel: data.winnerLabel,
        winnerModel: data.winnerModel,
        winnerResponse: winnerRow.content,
        winnerDecision: data.winnerDecision,
        voteCount: data.voteCount,
        totalVotes: data.totalVotes,
        tiebroken: data.tiebroken,
        ...(data.tiebroken ? { tiebreakerMethod: 'alphabetical' as const } : {}),
      };
    }
    if (title) result.title = title;
    return result;
  },

  headline: (result) => ({
    answer: result.winner?.winnerResponse ?? null,
    details: {
      winnerModel: result.winner?.winnerModel ?? null,
      winnerDecision: result.winner?.winnerDecision ?? null,
      voteCount: result.winner?.voteCount ?? null,
      totalVotes: result.winner?.totalVotes ?? null,
      tiebroken: result.winner?.tiebroken ?? null,
    },
  }),
});
