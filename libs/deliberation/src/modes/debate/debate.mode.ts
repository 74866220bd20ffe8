import type {
  DebateConfig,
  DebateResult,
  DebateVoteResult,
  DebateWinnerResult,
  LabelMap,
  RevisionDecision,
  RevisionResponse,
  RevisionSummary,
  Stage1Response,
  VoteResponse,
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
import { DEBATE_MAX_MODELS, DEBATE_MIN_MODELS, DebateConfigDto, resolveDebateConfig } from './debate.config';
import { parseRevision, revisedResponseOf, wordCount } from './debate.parse';
import { parseVote, tallyVotes } from '../../shared/voting';
import { buildRevisionPrompt, buildVoteOnRevisedPrompt } from './debate.prompts';

type Ctx = DeliberationContext<DebateConfig>;

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
const MIN_ANSWERS = 2;

/** Models may repeat in a debate: debaters are told apart by roster position. */
type Debater = SeatedAnswer;
const debaters = initialAnswers;

interface Revised extends RevisionResponse {
  participant: number;
}

/** Round 1 labels follow the roster; the vote's are shuffled per deliberation (§"Label Map Strategy"). */
const round1Order = (list: Debater[]) => list;
const voteOrder = (list: Debater[], messageId: string) =>
  shuffleWithSeed(list, `${messageId}:revised-labels`);

function labelMap<T extends { model: string }>(ordered: T[]): LabelMap {
  return Object.fromEntries(ordered.map((d, i) => [responseLabel(i), d.model]));
}

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
  const originals = new Map(debaters(rows).map((d) => [d.participant, d]));
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

function reduceRound1(outcomes: CallOutcome[]): StageReduction {
  const answered = outcomes.filter((o): o is SuccessfulCall => o.ok);
  const failed = outcomes
    .filter((o) => !o.ok)
    .map((o) => `${o.model} (${o.ok ? '' : o.error})`)
    .join(', ');
  if (answered.length === 0) return failure(`All debate models failed to answer: ${failed}.`);
  if (answered.length < MIN_ANSWERS) {
    return failure(
      `Only ${answered[0].model} answered; a debate needs at least ${MIN_ANSWERS}. Failed: ${failed}.`,
    );
  }
  const labels = labelMap(answered);
  const rows: StageRow[] = [
    {
      stageType: 'round1_label_map',
      stageOrder: ORDER.round1_label_map,
      model: null,
      role: null,
      content: JSON.stringify(labels),
      parsedData: labels,
      ...NO_USAGE,
    },
    ...answered.map((call): StageRow => ({
      stageType: 'initial_answer',
      stageOrder: ORDER.initial_answer,
      model: call.model,
      role: 'respondent',
      content: call.content,
      parsedData: { responseTimeMs: call.responseTimeMs },
      ...usageOf(call),
      participant: participantOfKey(call.key),
    })),
  ];
  const data: Stage1Response[] = answered.map((c) => ({
    model: c.model,
    response: c.content,
    responseTimeMs: c.responseTimeMs,
  }));
  return {
    rows,
    events: [modeEvent('round1_complete', { data })],
    transition: { kind: 'next', stage: 'revision' },
  };
}

function reduceRevision(ctx: Ctx, outcomes: CallOutcome[]): StageReduction {
  const byKey = new Map(outcomes.map((o) => [o.key, o]));
  const list = debaters(ctx.rows);
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
        ...(outcome?.ok ? usageOf(outcome) : NO_USAGE),
        participant: revision.participant,
      };
    }),
    {
      stageType: 'revision_summary',
      stageOrder: ORDER.revision_summary,
      model: null,
      role: null,
      content: JSON.stringify(summary),
      parsedData: { ...summary },
      ...NO_USAGE,
    },
    {
      stageType: 'revised_label_map',
      stageOrder: ORDER.revised_label_map,
      model: null,
      role: null,
      content: JSON.stringify(revisedLabels),
      parsedData: revisedLabels,
      ...NO_USAGE,
    },
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
  const list = debaters(ctx.rows);
  const ordered = voteOrder(list, ctx.messageId);
  const labels = ordered.map((_, i) => responseLabel(i));
  const revisedLabelToModel = labelMap(ordered);
  const revisions = new Map(revisionsFromRows(ctx.rows).map((r) => [r.participant, r]));
  const byKey = new Map(outcomes.map((o) => [o.key, o]));
  const cast = list.map((d) => byKey.get(participantKey(d.participant)));
  const votes: (VoteResponse & { participant: number })[] = list.flatMap((d, i) => {
    const outcome = cast[i];
    if (!outcome?.ok) return [];
    const parsed = parseVote(outcome.content);
    return [
      {
        participant: d.participant,
        model: d.model,
        voteText: outcome.content,
        votedFor: parsed && labels.includes(parsed) ? parsed : null,
        responseTimeMs: outcome.responseTimeMs,
      },
    ];
  });
  // Failed calls are votes that did not count, like unparseable ones.
  const tally = tallyVotes(
    cast.map((outcome, i) =>
      outcome?.ok ? (votes.find((v) => v.participant === list[i].participant)?.votedFor ?? null) : null,
    ),
    labels,
  );
  const voteRows: StageRow[] = votes.map((vote) => {
    const outcome = byKey.get(participantKey(vote.participant)) as SuccessfulCall;
    return {
      stageType: 'debate_vote',
      stageOrder: ORDER.debate_vote,
      model: vote.model,
      role: 'voter',
      content: vote.voteText,
      parsedData: { votedFor: vote.votedFor },
      ...usageOf(outcome),
      participant: vote.participant,
    };
  });
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
    votes: votes.map(({ participant: _p, ...vote }) => vote),
    tallies: tally.tallies,
    revisedLabelToModel,
    validVoteCount: tally.validVoteCount,
    invalidVoteCount: tally.invalidVoteCount,
    isTie: tally.isTie,
    tiedLabels: tally.tiedLabels,
  };
  const rows: StageRow[] = [
    ...voteRows,
    {
      stageType: 'debate_vote_tally',
      stageOrder: ORDER.debate_vote_tally,
      model: null,
      role: null,
      content: JSON.stringify({ tallies: tally.tallies, isTie: tally.isTie, winners: tally.winners }),
      parsedData: { ...tally },
      ...NO_USAGE,
    },
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

function plan(stage: string, ctx: Ctx): PlannedCall[] {
  const call = (participant: number, model: string, content: string): PlannedCall => ({
    key: participantKey(participant),
    participant: model,
    model,
    messages: [{ role: 'user', content }],
  });
  if (stage === 'round1') return ctx.config.models.map((model, i) => call(i, model, ctx.question));
  const list = debaters(ctx.rows);
  if (stage === 'revision') {
    const labeled = round1Order(list).map((d, i) => ({ debater: d, label: responseLabel(i) }));
    return labeled.map(({ debater }) =>
      call(
        debater.participant,
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
  if (stage === 'vote') {
    const revisions = new Map(revisionsFromRows(ctx.rows).map((r) => [r.participant, r.revisedResponse]));
    const prompt = buildVoteOnRevisedPrompt(
      ctx.question,
      voteOrder(list, ctx.messageId).map((d, i) => ({
        label: responseLabel(i),
        response: revisions.get(d.participant) ?? d.response,
      })),
    );
    return list.map((d) => call(d.participant, d.model, prompt));
  }
  throw new Error(`debate has no stage "${stage}"`);
}

export const debateMode: ModeDefinition<DebateConfig, Partial<DebateResult>> = {
  mode: 'debate',
  multiTurn: false,
  enforcesDeliberationCap: true,
  firstStage: 'round1',
  configSchema: DebateConfigDto,
  resolveConfig: resolveDebateConfig,
  timeoutMs: (config) => config.timeoutMs,

  startEvents(stage, ctx) {
    if (stage === 'round1') {
      return [
        modeEvent('debate_start', {
          conversationId: ctx.conversationId,
          messageId: ctx.messageId,
          mode: 'debate',
        }),
        modeEvent('round1_start'),
      ];
    }
    if (stage === 'revision')
      return [modeEvent('revision_start', { data: { labelMap: rowData(ctx.rows, 'round1_label_map') } })];
    if (stage === 'vote')
      return [modeEvent('vote_start', { data: { revisedLabelMap: rowData(ctx.rows, 'revised_label_map') } })];
    return [];
  },

  plan,

  reduce(stage, ctx, outcomes) {
    if (stage === 'round1') return reduceRound1(outcomes);
    if (stage === 'revision') return reduceRevision(ctx, outcomes);
    if (stage === 'vote') return reduceVote(ctx, outcomes);
    throw new Error(`debate has no stage "${stage}"`);
  },

  titleCall: (ctx) => ({ model: ctx.config.models[0], messages: buildTitlePrompt(ctx.question) }),

  load(rows, _config, title) {
    const result: Partial<DebateResult> = {};
    const list = debaters(rows);
    if (list.length > 0) {
      result.round1 = list.map((d) => ({
        model: d.model,
        response: d.response,
        responseTimeMs: d.responseTimeMs,
      }));
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
        votes: rows
          .filter((r) => r.stageType === 'debate_vote')
          .map((r) => ({
            model: r.model ?? '',
            voteText: r.content,
            votedFor: (r.parsedData as { votedFor: string | null }).votedFor,
            responseTimeMs: r.responseTimeMs ?? 0,
          })),
        tallies: tally.tallies,
        revisedLabelToModel: result.revisedLabelMap,
        validVoteCount: tally.validVoteCount,
        invalidVoteCount: tally.invalidVoteCount,
        isTie: tally.isTie,
        tiedLabels: tally.tiedLabels,
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

  describe(defaults) {
    return {
      mode: 'debate',
      available: true,
      multiTurn: false,
      roster: [
        { role: 'debater', field: 'modeConfig.models', min: DEBATE_MIN_MODELS, max: DEBATE_MAX_MODELS },
      ],
      defaults: { models: defaults.debate.models, timeoutMs: defaults.timeoutMs },
      options: [
        {
          field: 'timeoutMs',
          type: 'integer',
          description: 'per-call timeout (10000-600000 ms)',
          default: defaults.timeoutMs,
        },
      ],
    };
  },
};
