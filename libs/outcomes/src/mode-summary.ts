import type { DeliberationView, LabelMap } from '@conclave/contracts';
import type { AnyResult } from './final-text';
import type {
  CouncilSummary,
  DebateSummary,
  DelphiRoundOutcome,
  DelphiSummary,
  JurySummary,
  VotingSummary,
} from './outcome.types';
import { delphiEstimates } from './panelists';

type Tallied = {
  tallies: Record<string, number>;
  validVoteCount: number;
  invalidVoteCount: number;
  isTie: boolean;
  tiedLabels: string[];
};

type Winner = { winnerLabel: string; winnerModel: string; voteCount: number; totalVotes: number };

function voting(
  votes: Tallied | undefined,
  labels: LabelMap | undefined,
  winner: Winner | undefined,
  tiebreak: VotingSummary['tiebreak'],
): VotingSummary {
  const modelOf = (label: string) => (labels && Object.hasOwn(labels, label) ? labels[label] : null);
  const tallyLabels = [
    ...new Set([...Object.keys(labels ?? {}), ...Object.keys(votes?.tallies ?? {})]),
  ].sort();
  return {
    tally: votes
      ? tallyLabels
          .map((label) => ({ label, model: modelOf(label), votes: votes.tallies[label] ?? 0 }))
          .sort((a, b) => b.votes - a.votes || a.label.localeCompare(b.label))
      : [],
    validVotes: votes?.validVoteCount ?? 0,
    invalidVotes: votes?.invalidVoteCount ?? 0,
    tie: votes?.isTie ?? false,
    tiedModels: (votes?.tiedLabels ?? []).map((label) => modelOf(label) ?? label),
    tiebreak,
    winner: winner
      ? {
          model: winner.winnerModel,
          label: winner.winnerLabel,
          votes: winner.voteCount,
          totalVotes: winner.totalVotes,
        }
      : null,
  };
}

export const councilSummary = (result: AnyResult): CouncilSummary => ({
  aggregateRanking: (result.stage2Metadata?.aggregateRankings ?? []).map((a) => ({
    model: a.model,
    averageRank: a.averageRank,
    rankingsCount: a.rankingsCount,
  })),
});

export function voteSummary(result: AnyResult): VotingSummary {
  const tiebreak = result.tiebreak
    ? { method: result.tiebreak.method, model: result.tiebreak.model }
    : result.winner?.tiebroken
      ? { method: result.winner.tiebreakerMethod ?? 'alphabetical', model: null }
      : null;
  return voting(result.votes, result.labelMap, result.winner, tiebreak);
}

export function debateSummary(result: AnyResult): DebateSummary {
  const labels = result.votes?.revisedLabelToModel ?? result.revisedLabelMap;
  const tiebreak = result.winner?.tiebroken ? { method: 'alphabetical' as const, model: null } : null;
  const s = result.revisionSummary;
  return {
    ...voting(result.votes, labels, result.winner, tiebreak),
    revisions: s ? { revised: s.revised, stood: s.stood, merged: s.merged, unreadable: s.parseFailed } : null,
  };
}

export function jurySummary(result: AnyResult): JurySummary {
  const summary = result.jurorSummary;
  return {
    majorityVerdict: result.majorityVerdict ?? summary?.majorityVerdict ?? null,
    finalVerdict: result.foreman?.finalVerdict ?? null,
    tally: result.voteTally ?? summary?.voteTally ?? null,
    dimensionMeans: result.dimensionAverages ?? summary?.dimensionAverages ?? null,
    jurors: summary?.jurorCount ?? null,
    successfulJurors: summary?.successfulJurors ?? null,
    warnings: [...(summary?.warnings ?? [])],
  };
}

export function delphiSummary(result: AnyResult, attributed: boolean): DelphiSummary {
  const estimates = delphiEstimates(result, attributed);
  const rounds = (result.rounds ?? []).map((round): DelphiRoundOutcome => {
    const stats = round.stats;
    const figures =
      'median' in stats
        ? { median: stats.median, mean: stats.mean, cv: stats.cv, min: stats.min, max: stats.max }
        : {
            modeAnswer: stats.mode,
            agreementPercentage: stats.agreementPercentage,
            distribution: stats.distribution.map((d) => ({ ...d })),
          };
    return {
      round: round.roundNumber,
      converged: round.converged,
      ...figures,
      estimates: estimates.filter((e) => e.round === round.roundNumber),
    };
  });
  const report = result.report;
  return {
    questionType: result.classification?.type ?? null,
    options: result.classification?.options ?? null,
    rounds,
    converged: result.converged ?? report?.converged ?? null,
    convergenceRound: result.convergenceRound ?? null,
    finalValue: result.finalValue ?? report?.finalValue ?? null,
    median: report?.median ?? null,
    interval: report?.confidenceInterval ? { ...report.confidenceInterval } : null,
    attributed,
  };
}

/** The mode's own summary, under the mode's name. */
export function modeSummary(view: DeliberationView, attributed: boolean) {
  const result = (view.result ?? {}) as AnyResult;
  switch (view.mode) {
    case 'council':
      return { council: councilSummary(result) };
    case 'vote':
      return { vote: voteSummary(result) };
    case 'debate':
      return { debate: debateSummary(result) };
    case 'jury':
      return { jury: jurySummary(result) };
    case 'delphi':
      return { delphi: delphiSummary(result, attributed) };
    default:
      return {};
  }
}
