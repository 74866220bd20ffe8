import { confidenceInterval95 } from '@conclave/contracts';
import type { RankingBallot } from '../ranking';
import { asNumber, asObject, asString, asStrings, type ReportStageRow } from './rows';

/**
 * Each mode's stored rows read back into the few facts the statistics need. These follow the
 * modes' own `load` functions in @conclave/deliberation (which this library cannot import: it must
 * run in the browser), reading only what the report uses and tolerating rows that lack a field.
 */

const labelPosition = (label: string): number | null => {
  const match = /^Response ([A-Z])$/.exec(label);
  return match ? match[1].charCodeAt(0) - 64 : null;
};

export { labelPosition };

function labelMap(row: ReportStageRow | undefined): Record<string, string> {
  const data = asObject(row?.data);
  const map: Record<string, string> = {};
  if (!data) return map;
  for (const [label, model] of Object.entries(data)) if (typeof model === 'string') map[label] = model;
  return map;
}

const find = (rows: readonly ReportStageRow[], type: string) => rows.find((r) => r.stageType === type);
const byParticipant = (a: ReportStageRow, b: ReportStageRow) => (a.participant ?? 0) - (b.participant ?? 0);

// --- council ------------------------------------------------------------------------------------

export interface CouncilFacts {
  /** Label → model of the ranking round (follows the roster order). */
  labelToModel: Record<string, string>;
  /** Models whose answers were ranked. */
  candidates: string[];
  /** Parsed rankings, labels mapped to models. */
  ballots: RankingBallot[];
  /** Every ranking returned, parsed or not. */
  rankings: { model: string; parsed: boolean }[];
  /** The best aggregate rank as the mode stored it; null before or without rankings. */
  winner: string | null;
  /** Mean rank per model over the item's ballots (1 = best). */
  meanRanks: Map<string, number>;
  hasSynthesis: boolean;
}

export function councilFacts(rows: readonly ReportStageRow[]): CouncilFacts {
  const labelToModel = labelMap(find(rows, 'stage2_label_map'));
  const rankingRows = rows.filter((r) => r.stageType === 'stage2');
  const ballots: RankingBallot[] = [];
  const rankings: { model: string; parsed: boolean }[] = [];
  const sums = new Map<string, { sum: number; n: number }>();
  for (const row of rankingRows) {
    const labels = asStrings(asObject(row.data)?.parsedRanking);
    const ranking = labels.map((l) => labelToModel[l]).filter((m): m is string => m !== undefined);
    const parsed = ranking.length > 0;
    rankings.push({ model: row.model ?? '', parsed });
    if (!parsed) continue;
    ballots.push({ ranker: row.model, ranking });
    [...new Set(ranking)].forEach((model, i) => {
      const s = sums.get(model) ?? { sum: 0, n: 0 };
      s.sum += i + 1;
      s.n++;
      sums.set(model, s);
    });
  }
  const aggregate = asObject(find(rows, 'stage2_aggregate')?.data)?.aggregateRankings;
  const first = Array.isArray(aggregate) ? asObject(aggregate[0]) : null;
  return {
    labelToModel,
    candidates: Object.values(labelToModel),
    ballots,
    rankings,
    winner: asString(first?.model),
    meanRanks: new Map([...sums].map(([model, s]) => [model, s.sum / s.n])),
    hasSynthesis: rows.some((r) => r.stageType === 'stage3'),
  };
}

// --- vote and debate ------------------------------------------------------------------------------

export interface ContestFacts {
  /** Models that answered (once each, though a model may hold two seats). */
  contestants: string[];
  /** Label → model of the vote (shuffled per deliberation in both modes). */
  labelToModel: Record<string, string>;
  votes: { voter: string; votedFor: string | null }[];
  validVotes: number;
  invalidVotes: number;
  /** Votes per label as tallied. */
  tallies: Record<string, number>;
  isTie: boolean;
  tiedLabels: string[];
  winner: string | null;
  winnerLabel: string | null;
  tiebroken: boolean;
  /** `chairman` or `alphabetical` when a tie was broken. */
  tiebreakMethod: string | null;
  /** Debate only: each debater's decision in the revision round. */
  revisions: { model: string; decision: string | null; parsed: boolean }[];
  /** Debate only: the winner's own revision decision (null when it did not parse). */
  winnerDecision: string | null;
}

const STAGES = {
  vote: { labels: 'vote_label_map', vote: 'vote', tally: 'vote_tally', winner: 'vote_winner' },
  debate: {
    labels: 'revised_label_map',
    vote: 'debate_vote',
    tally: 'debate_vote_tally',
    winner: 'debate_winner',
  },
} as const;

export function contestFacts(mode: 'vote' | 'debate', rows: readonly ReportStageRow[]): ContestFacts {
  const stages = STAGES[mode];
  const contestants = [
    ...new Set(
      rows
        .filter((r) => r.stageType === 'initial_answer')
        .sort(byParticipant)
        .map((r) => r.model ?? ''),
    ),
  ];
  const labelToModel = labelMap(find(rows, stages.labels));
  const votes = rows
    .filter((r) => r.stageType === stages.vote)
    .sort(byParticipant)
    .map((r) => ({ voter: r.model ?? '', votedFor: asString(asObject(r.data)?.votedFor) }));
  const tally = asObject(find(rows, stages.tally)?.data);
  const tallies: Record<string, number> = {};
  for (const [label, count] of Object.entries(asObject(tally?.tallies) ?? {})) {
    const n = asNumber(count);
    if (n !== null) tallies[label] = n;
  }
  const winnerRow = find(rows, stages.winner);
  const winnerData = asObject(winnerRow?.data);
  const tiebroken = winnerData?.tiebroken === true;
  const tiebreak = find(rows, 'tiebreak');
  const method =
    asString(winnerData?.tiebreakerMethod) ??
    asString(asObject(tiebreak?.data)?.method) ??
    (tiebroken && mode === 'debate' ? 'alphabetical' : null);
  const revisions = rows
    .filter((r) => r.stageType === 'revision')
    .sort(byParticipant)
    .map((r) => {
      const data = asObject(r.data);
      return {
        model: r.model ?? '',
        decision: asString(data?.decision),
        parsed: data?.parseSuccess === true,
      };
    });
  const validVotes =
    asNumber(tally?.validVoteCount) ??
    votes.filter((v) => v.votedFor !== null && v.votedFor in labelToModel).length;
  return {
    contestants,
    labelToModel,
    votes,
    validVotes,
    invalidVotes: asNumber(tally?.invalidVoteCount) ?? votes.length - validVotes,
    tallies,
    isTie: tally?.isTie === true,
    tiedLabels: asStrings(tally?.tiedLabels),
    winner: winnerRow ? (asString(winnerData?.winnerModel) ?? winnerRow.model) : null,
    winnerLabel: asString(winnerData?.winnerLabel),
    tiebroken,
    tiebreakMethod: tiebroken ? method : null,
    revisions,
    winnerDecision: asString(winnerData?.winnerDecision),
  };
}

// --- jury ---------------------------------------------------------------------------------------

export interface JurorFacts {
  /** The model, or `model#seat` for a second seat of the same model on the item. */
  juror: string;
  scores: Map<string, number>;
  verdict: string | null;
  parsed: boolean;
}

export interface JuryFacts {
  jurors: JurorFacts[];
  /** The foreman's verdict, else the jurors' majority; null before either exists. */
  finalVerdict: string | null;
}

export function juryFacts(rows: readonly ReportStageRow[]): JuryFacts {
  const seen = new Set<string>();
  const jurors = rows
    .filter((r) => r.stageType === 'deliberation')
    .sort(byParticipant)
    .map((r): JurorFacts => {
      const model = r.model ?? '';
      const juror = seen.has(model) ? `${model}#${r.participant ?? '?'}` : model;
      seen.add(model);
      const data = asObject(r.data);
      const scores = new Map<string, number>();
      for (const [dimension, score] of Object.entries(asObject(data?.scores) ?? {})) {
        const n = asNumber(score);
        if (n !== null) scores.set(dimension, n);
      }
      return { juror, scores, verdict: asString(data?.verdict), parsed: data?.parseSuccess === true };
    });
  const foreman = asString(asObject(find(rows, 'verdict')?.data)?.finalVerdict);
  const majority = asString(asObject(find(rows, 'juror_summary')?.data)?.majorityVerdict);
  return { jurors, finalVerdict: foreman ?? majority };
}

// --- Delphi -------------------------------------------------------------------------------------

export interface DelphiAnswerFacts {
  model: string;
  participant: number;
  value: number | string | null;
  previous: number | string | null;
  /** The panelist's call failed and its previous answer stood in. */
  carriedForward: boolean;
}

export interface DelphiRoundFacts {
  round: number;
  median: number | null;
  cv: number | null;
  /** Qualitative: share on the most common answer, 0–1. */
  agreement: number | null;
  converged: boolean;
  answers: DelphiAnswerFacts[];
}

export interface DelphiFacts {
  type: 'numeric' | 'qualitative' | null;
  /** Rounds with their statistics, in order. */
  rounds: DelphiRoundFacts[];
  converged: boolean;
  convergenceRound: number | null;
  /** Numeric: the last round's median (a comparison figure; not the mode's final value). */
  finalMedian: number | null;
  /**
   * Numeric: the value the mode reports as final (`finalValue`, the mean of the last round's
   * estimates, 05-delphi.md): the value reference errors are measured on.
   */
  finalValue: number | null;
  /** Numeric: the last round's estimates (carried-forward answers included, as the mode counts them). */
  finalEstimates: number[];
  /** Qualitative: the most common final answer. */
  finalAnswer: string | null;
}

/** The interval the Delphi report states (contracts' `confidenceInterval95`), recomputed. */
export function delphiInterval(values: readonly number[]): { low: number; high: number } | null {
  if (values.length === 0) return null;
  const { low, high } = confidenceInterval95(values);
  return { low, high };
}

const ROUND = /^round_(\d+)$/;
const ROUND_STATS = /^round_(\d+)_stats$/;

export function delphiFacts(rows: readonly ReportStageRow[]): DelphiFacts {
  const stats = new Map<number, Record<string, unknown>>();
  const answers = new Map<number, DelphiAnswerFacts[]>();
  let type: DelphiFacts['type'] = null;
  for (const row of rows) {
    const data = asObject(row.data) ?? {};
    if (row.stageType === 'classify') {
      const t = asString(data.type);
      if (t === 'numeric' || t === 'qualitative') type = t;
      continue;
    }
    const statsMatch = ROUND_STATS.exec(row.stageType);
    if (statsMatch) {
      stats.set(Number(statsMatch[1]), data);
      continue;
    }
    const roundMatch = ROUND.exec(row.stageType);
    if (!roundMatch) continue;
    const round = Number(roundMatch[1]);
    const numeric = data.type === 'numeric';
    const list = answers.get(round) ?? [];
    list.push({
      model: row.model ?? '',
      participant: row.participant ?? 0,
      value: numeric ? asNumber(data.estimate) : asString(data.answer),
      previous: numeric ? asNumber(data.previousEstimate) : asString(data.previousAnswer),
      carriedForward: data.carriedForward === true,
    });
    answers.set(round, list);
  }
  const rounds: DelphiRoundFacts[] = [];
  for (let round = 1; stats.has(round); round++) {
    const s = stats.get(round) ?? {};
    const agreement = asNumber(s.agreementPercentage);
    rounds.push({
      round,
      median: asNumber(s.median),
      cv: asNumber(s.cv),
      agreement: agreement === null ? null : agreement / 100,
      converged: s.converged === true,
      answers: (answers.get(round) ?? []).sort((a, b) => a.participant - b.participant),
    });
  }
  const last = rounds.at(-1);
  if (type === null && last) type = last.median !== null ? 'numeric' : 'qualitative';
  const lastStats = last ? (stats.get(last.round) ?? {}) : {};
  const finalValues = (last?.answers ?? [])
    .map((a) => a.value)
    .filter((v): v is number => typeof v === 'number');
  return {
    type,
    rounds,
    converged: last?.converged ?? false,
    convergenceRound: rounds.find((r) => r.converged)?.round ?? null,
    finalMedian: type === 'numeric' ? (last?.median ?? null) : null,
    finalValue:
      type === 'numeric'
        ? (asNumber(asObject(find(rows, 'synthesis')?.data)?.finalValue) ?? asNumber(lastStats.mean))
        : null,
    finalEstimates: type === 'numeric' ? finalValues : [],
    finalAnswer: type === 'qualitative' ? asString(lastStats.mode) : null,
  };
}
