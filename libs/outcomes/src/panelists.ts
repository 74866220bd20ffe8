import type { DeliberationView, ModeName } from '@conclave/contracts';
import { modeFacts } from '@conclave/deliberation/facts';
import type { AnyResult } from './final-text';
import type { DelphiEstimateOutcome, PanelistOutcome } from './outcome.types';
import { nth, occurrences, PANEL_ROLE, roleOf, seatCalls, usageOf } from './roles';

type Fields = Omit<PanelistOutcome, 'model' | 'role' | 'failed'>;
/** What a mode's result says of the k-th seat of `model`. */
type SeatReader = (result: AnyResult, model: string, k: number) => Fields;

const labelOf = (labels: Record<string, string> | undefined, model: string, k: number): string | undefined =>
  Object.keys(labels ?? {})
    .sort()
    .filter((label) => labels?.[label] === model)[k];

const modelOfLabel = (labels: Record<string, string> | undefined, label: string | null): string | null =>
  label !== null && labels && Object.hasOwn(labels, label) ? labels[label] : null;

const council: SeatReader = (result, model, k) => {
  const labels = result.stage2Metadata?.labelToModel;
  const ranking = nth(result.stage2, model, k);
  const aggregate = result.stage2Metadata?.aggregateRankings.find((a) => a.model === model);
  const label = labelOf(labels, model, k);
  return {
    ...(nth(result.stage1, model, k) ? { answer: nth(result.stage1, model, k)?.response } : {}),
    ...(label ? { label } : {}),
    ...(ranking ? { ranking: ranking.parsedRanking.map((l) => modelOfLabel(labels, l) ?? l) } : {}),
    ...(aggregate ? { averageRank: aggregate.averageRank } : {}),
  };
};

const vote: SeatReader = (result, model, k) => {
  const ballot = nth(result.votes?.votes, model, k);
  const label = labelOf(result.labelMap, model, k);
  return {
    ...(nth(result.stage1, model, k) ? { answer: nth(result.stage1, model, k)?.response } : {}),
    ...(label ? { label } : {}),
    ...(ballot ? { vote: modelOfLabel(result.labelMap, ballot.votedFor), reason: ballot.voteText } : {}),
  };
};

const debate: SeatReader = (result, model, k) => {
  const first = nth(result.round1, model, k);
  const revision = nth(result.revisions, model, k);
  const labels = result.votes?.revisedLabelToModel ?? result.revisedLabelMap;
  const ballot = nth(result.votes?.votes, model, k);
  const label = labelOf(labels, model, k);
  const answer = revision?.revisedResponse ?? first?.response;
  return {
    ...(answer !== undefined ? { answer } : {}),
    ...(first ? { originalAnswer: first.response } : {}),
    ...(revision ? { action: revision.decision } : {}),
    ...(label ? { label } : {}),
    ...(ballot ? { vote: modelOfLabel(labels, ballot.votedFor), reason: ballot.voteText } : {}),
  };
};

const jury: SeatReader = (result, model, k) => {
  const juror = nth(result.jurors, model, k);
  if (!juror) return {};
  return {
    answer: juror.assessmentText,
    scores: { ...juror.scores },
    averageScore: juror.average,
    verdict: juror.verdict,
  };
};

/** Delphi's panelists, numbered in the order they first gave a valid estimate. */
export function delphiParticipants(result: AnyResult): Map<string, number> {
  const numbers = new Map<string, number>();
  for (const round of result.rounds ?? []) {
    for (const estimate of round.estimates) {
      if (!numbers.has(estimate.model)) numbers.set(estimate.model, numbers.size + 1);
    }
  }
  return numbers;
}

/** Every valid estimate of every round; with `attributed`, each names its model and reasoning. */
export function delphiEstimates(result: AnyResult, attributed: boolean): DelphiEstimateOutcome[] {
  const numbers = delphiParticipants(result);
  return (result.rounds ?? []).flatMap((round) =>
    round.estimates.map((e): DelphiEstimateOutcome => ({
      round: round.roundNumber,
      participant: numbers.get(e.model) ?? 0,
      ...(attributed ? { model: e.model } : {}),
      value: 'estimate' in e ? e.estimate : e.answer,
      confidence: e.confidence,
      changed: e.changed,
      ...(attributed ? { reasoning: e.reasoning } : {}),
    })),
  );
}

/** Anonymous while the exercise runs (05-delphi.md, UI display): estimates only once it is over. */
const delphi =
  (attributed: boolean): SeatReader =>
  (result, model) => {
    if (!attributed) return {};
    const estimates = delphiEstimates(result, true).filter((e) => e.model === model);
    return estimates.length > 0 ? { estimates } : {};
  };

/** Each panel member, named, with what it answered, ranked, voted, scored or estimated. */
export function panelistsOf(view: DeliberationView, attributed: boolean): PanelistOutcome[] {
  const result = (view.result ?? {}) as AnyResult;
  const role = PANEL_ROLE[view.mode];
  const panelCalls = view.calls.filter((c) => roleOf(view.mode, c.stage) === role);
  const seated = modeFacts(view.mode)?.result.seated(result) ?? [];
  // Members whose every answer failed appear in no stage of the result: their calls name them.
  const missing = [...new Set(panelCalls.filter((c) => !c.ok).map((c) => c.model))].filter(
    (model) => !seated.includes(model),
  );
  const models = [...seated, ...missing];
  const readers: Record<ModeName, SeatReader> = { council, vote, debate, jury, delphi: delphi(attributed) };
  const read = readers[view.mode] ?? (() => ({}));
  const ks = occurrences(models);
  return models.map((model, i) => {
    const calls = seatCalls(panelCalls, model, ks[i]);
    const failure = calls.find((c) => !c.ok);
    const usage = usageOf(calls);
    return {
      model,
      role,
      failed: failure !== undefined,
      ...(failure ? { error: failure.error ?? 'the call failed' } : {}),
      ...read(result, model, ks[i]),
      ...(usage ? { usage } : {}),
    };
  });
}
