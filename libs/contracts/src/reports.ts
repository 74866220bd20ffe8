import type { BatchStatus } from './batches';
import type { ModeName } from './modes';
import type { PanelGainSection } from './panel-gain';

/**
 * Batch reports and comparisons (issue 21): `GET /api/batches/:id/report` and
 * `GET /api/batches/compare?a=…&b=…` (JSON; `format=md` gives the same content as Markdown).
 *
 * Every figure names its n (what it was computed over is said by the field's documentation), and a
 * figure that cannot be computed is `value: null` with a `note` saying why, never NaN. Intervals are
 * 95 %: Wilson score for rates, percentile bootstrap over items (seeded with the batch id, so a
 * report is identical each time it is computed) for means and differences, the asymptotic standard
 * error for Cohen's κ.
 */

export type ReportIntervalMethod =
  | 'percentile-bootstrap'
  | 'wilson-score'
  | 'asymptotic-standard-error'
  | 'student-t'
  | 'item-cluster-bootstrap'
  /** Tango's score interval for a paired difference of proportions (panel gain, issue 37). */
  | 'tango-score';

export interface ReportInterval {
  lower: number;
  upper: number;
  /** Nominal coverage, 0.95. */
  confidence: number;
  method: ReportIntervalMethod;
}

/** A number with its n and, where one is computed, its interval. */
export interface ReportFigure {
  value: number | null;
  /** How many items (or ballots, ratings, calls: the field says which) the figure is computed over. */
  n: number;
  interval: ReportInterval | null;
  /** Why the value or its interval is missing, for a reader; null when nothing is missing. */
  note: string | null;
}

/** A share `count / n` with its Wilson interval (`value` null when n is 0). */
export interface ReportRate extends ReportFigure {
  count: number;
}

/** Median and 95th percentile over n values (type-7 quantiles, as R and NumPy compute them). */
export interface ReportQuantiles {
  n: number;
  p50: number | null;
  p95: number | null;
}

export interface ReportCategoryCount {
  category: string;
  count: number;
  /** count / n of the distribution; null when n is 0. */
  share: number | null;
}

export interface ReportDistribution {
  /** Values counted. */
  n: number;
  categories: ReportCategoryCount[];
}

/** A batch item a report points at; `webPath` opens it in the web client. */
export interface ReportItemLink {
  index: number;
  key: string | null;
  messageId: string;
  /** `#/m/<messageId>`, relative to wherever the web client is served. */
  webPath: string;
}

// ---------------------------------------------------------------------------------------------
// Agreement readings and reference agreement

export type ReportKappaReading = 'poor' | 'slight' | 'fair' | 'moderate' | 'substantial' | 'almost perfect';
export type ReportAlphaReading = 'reliable' | 'tentative' | 'unreliable';

/** Cohen's κ between the panel's outcome and the items' `reference`, with the confusion matrix. */
export interface ReportCohenKappa {
  /** κ over the n items that have both an outcome and a reference. */
  kappa: ReportFigure;
  /** Landis & Koch (1977) reading of κ; null when κ is null. */
  reading: ReportKappaReading | null;
  /** Share of those items where the panel matched the reference, with its Wilson interval. */
  observedAgreement: ReportRate;
  /** Agreement expected by chance from the two label distributions. */
  expectedAgreement: number | null;
  /** Row (reference) and column (panel) labels of `confusion`. */
  categories: string[];
  /** confusion[i][j] = items whose reference was categories[i] and panel outcome categories[j]. */
  confusion: number[][];
}

export interface ReportReferenceAgreement {
  /**
   * Items of the mode that carry a reference, in every state (complete, failed, cancelled, still
   * running): the count is over all the batch's items of the mode, not only those compared.
   */
  itemsWithReference: number;
  /** Items of the mode without one, in every state. */
  itemsWithoutReference: number;
  /**
   * Items with a reference that are not compared below, and why: not complete (failed, cancelled,
   * unfinished), complete without an outcome to compare, or carrying a reference the outcome cannot
   * be compared with (text on a numeric Delphi question).
   */
  notCompared: ReportReferenceExclusions;
  /** What the reference is compared with, in words (e.g. "the final verdict"). */
  comparedWith: string;
  /** How often the panel's outcome equals the reference (n: items with both). */
  matching: ReportRate;
  /** κ and the confusion matrix; null for a numeric Delphi reference. */
  cohen: ReportCohenKappa | null;
  /** Numeric Delphi only: error of the final value against the reference. */
  numeric: ReportNumericReference | null;
  /** Items whose outcome did not match the reference, first 20 in submission order. */
  mismatches: (ReportItemLink & { reference: string; outcome: string | null })[];
}

export interface ReportReferenceExclusions {
  /** All items with a reference that are not compared (the sum of the counts below). */
  count: number;
  failed: number;
  cancelled: number;
  /** Still queued or running. */
  unfinished: number;
  /** Complete, but without an outcome to compare (no verdict, winner, final value or answer). */
  noOutcome: number;
  /** Complete, but the reference cannot be compared with the outcome (e.g. text on a numeric question). */
  unusableReference: number;
  /** The first 20 in submission order, with the reason in words. */
  items: (ReportItemLink & { reason: string })[];
}

/**
 * Numeric Delphi reference. Errors are measured on the item's final value as the mode reports it
 * (`finalValue`: the mean of the last round's estimates, 05-delphi.md), never on another statistic.
 */
export interface ReportNumericReference {
  /** Mean of |final value − reference| with a bootstrap interval (n: items). */
  meanAbsoluteError: ReportFigure;
  /** Median of |final value − reference|. */
  medianAbsoluteError: ReportQuantiles;
  /** Mean of (final value − reference): positive when the panel overestimates. */
  meanSignedError: ReportFigure;
  /**
   * Mean of 100 · |final value − reference| / |reference|, IN PERCENT (12.5 means 12.5 %), over
   * items with a non-zero reference (n), with a bootstrap interval.
   */
  meanAbsolutePercentageError: ReportFigure;
  /**
   * How often the reference falls inside the 95 % prediction interval of the final round's
   * estimates, mean ± t(0.975, n − 1) · s · √(1 + 1/n) (n: items whose final round has two or more
   * estimates). It asks whether the truth looks like one more panelist's answer; the mode's own
   * "confidence interval" is an interval for the panel mean and is not a coverage claim.
   */
  predictionIntervalCoverage: ReportRate;
  /** How often the reference lies within [lowest, highest] final-round estimate (n: items with an estimate). */
  finalRangeCoverage: ReportRate;
}

// ---------------------------------------------------------------------------------------------
// Position bias

export interface ReportPositionShare {
  /** 1-based position the answer was shown at (`Response A` = 1). */
  position: number;
  label: string;
  /** Valid votes for the answer at this position (n: valid votes on items showing this many answers). */
  votes: ReportRate;
  /** 1 / answers shown: the share with no position effect. */
  expectedShare: number;
}

export interface ReportPositionGroup {
  /** Number of answers shown on these items. */
  answersShown: number;
  items: number;
  validVotes: number;
  positions: ReportPositionShare[];
  /** Whether votes depart from an even split by position, tested with the item as the unit. */
  test: ReportPositionTest;
}

/**
 * The position-bias test of one group of items. Its unit is the item: every voter on an item saw
 * the same shuffle, so the item's votes are relabelled together (a permutation test), never treated
 * as independent observations.
 */
export type ReportPositionTest =
  | {
      run: true;
      /** The method in words. */
      method: string;
      unit: 'item';
      /** Items with at least one valid vote. */
      items: number;
      /** Pearson's χ² of the pooled votes per position against an even split (the test statistic). */
      statistic: number;
      degreesOfFreedom: number;
      /** Permutation p-value: (1 + relabellings at least as extreme) / (1 + resamples). */
      pValue: number;
      /** Holm-adjusted over the groups of this section when there are several; else null. */
      holmAdjustedPValue: number | null;
      resamples: number;
      seed: string;
    }
  | {
      run: false;
      items: number;
      /** Why the test was not run (too few items), for the reader. */
      reason: string;
    };

export interface ReportPositionBias {
  /** False when the mode shows its labels in a fixed order, so position and model cannot be told apart. */
  computable: boolean;
  /** How the mode assigns labels, in plain words; says why the figure cannot be computed when it cannot. */
  explanation: string;
  groups: ReportPositionGroup[];
}

// ---------------------------------------------------------------------------------------------
// Per model usage (all modes) and failures

export interface ReportModelUsage {
  model: string;
  /** Model calls recorded for the report's items (n of the rates below). */
  calls: number;
  failedCalls: ReportRate;
  /** Answers that could not be parsed (a ranking, vote, score, verdict, estimate) over answers parsed (n). */
  parseFailures: ReportRate;
  promptTokens: number;
  completionTokens: number;
  costUsd: number;
  /** Over the model's successful calls. */
  latencyMs: ReportQuantiles;
}

export interface ReportFailureGroup {
  /** The stored error text, as recorded (cut at 500 characters). */
  error: string;
  count: number;
  /** The first five items with this error. */
  examples: ReportItemLink[];
}

export interface ReportFailures {
  /** Failed items over finished items. */
  failedItems: ReportRate;
  cancelledItems: number;
  /** Most frequent first, at most 20 groups. */
  groups: ReportFailureGroup[];
  /** Failed items in groups beyond the 20 shown. */
  otherFailedItems: number;
}

// ---------------------------------------------------------------------------------------------
// Mode sections. Each is computed over the batch's complete items of that mode (`items`).

export interface ReportCouncilModel {
  model: string;
  /** Items on which at least one ballot ranked the model. */
  itemsRanked: number;
  ballots: number;
  /** Mean over items of the model's mean rank (1 = best), bootstrap interval (n: items ranked). */
  averageRank: ReportFigure;
  /** Share of items where the model had the best mean rank (a k-way tie gives 1/k), bootstrap interval. */
  firstPlaceShare: ReportFigure;
  /** Borda points over all ballots: with m answers on the item, place p earns m − p. */
  bordaPoints: number;
  /** Mean Borda points per item it was ranked on, bootstrap interval over items (n: items ranked). */
  bordaPointsPerItem: ReportFigure;
  /**
   * Whether this model's average-rank interval overlaps the next model's in this list (true: the
   * two are not distinguishable at 95 %); null for the last model or when either has no interval.
   */
  overlapsNext: boolean | null;
  selfPreference: {
    /** Items where the model ranked its own answer and at least one other member ranked it too. */
    n: number;
    meanSelfRank: number | null;
    meanOthersRank: number | null;
    /** Mean of (own rank − others' mean rank); negative = the model favours its own answer. */
    difference: ReportFigure;
  };
}

export interface ReportCouncil {
  items: number;
  /** Parsed ballots (rankings) over those items. */
  ballots: number;
  /** Rankings that could not be parsed over rankings returned (n). */
  unparsedRankings: ReportRate;
  /** Best average rank first. */
  models: ReportCouncilModel[];
  /** The leaderboard's multiple-comparison note; null with fewer than two models. */
  leaderboardNote: string | null;
  chairman: {
    /** Items that reached the chairman (rankings done), finished. */
    itemsReached: number;
    /** Items whose chairman call failed, over items that reached it. */
    failures: ReportRate;
    byModel: { model: string; items: number; failures: number }[];
  };
  positionBias: ReportPositionBias;
  /** Reference: the expected best-ranked model. */
  reference: ReportReferenceAgreement | null;
}

export interface ReportContestModel {
  model: string;
  /** Items on which the model answered (n of the rates). */
  contests: number;
  /** Items it was declared the winner of (after any tiebreak). */
  wins: number;
  winRate: ReportRate;
  /** Items where it shared the most votes with another answer. */
  tiedFirst: number;
  /** Wins that came from a tiebreak. */
  winsByTiebreak: number;
  /** Valid votes it received over valid votes cast on its items. */
  voteShare: ReportRate;
  /**
   * Whether this model's win-rate interval overlaps the next model's in this list (true: the two
   * are not distinguishable at 95 %); null for the last model or when either has no interval.
   */
  overlapsNext: boolean | null;
}

export interface ReportTies {
  /** Items whose vote was tied at the top, over decided items. */
  tied: ReportRate;
  /** How the ties were broken: `chairman`, `alphabetical`. */
  brokenBy: ReportCategoryCount[];
}

export interface ReportVote {
  items: number;
  /** Votes that named no shown answer over votes cast (n). */
  invalidVotes: ReportRate;
  /** Highest win rate first. */
  models: ReportContestModel[];
  /** The leaderboard's multiple-comparison note; null with fewer than two models. */
  leaderboardNote: string | null;
  ties: ReportTies;
  positionBias: ReportPositionBias;
  /** Reference: the expected winner model. */
  reference: ReportReferenceAgreement | null;
}

export interface ReportRevisionModel {
  model: string;
  /** Revision answers by the model (n of the rates). */
  revisions: number;
  revise: ReportRate;
  stand: ReportRate;
  merge: ReportRate;
  unparsed: ReportRate;
}

export interface ReportDebate extends ReportVote {
  revisions: ReportRevisionModel[];
  /** The winner's own decision in the revision round (n: decided items). */
  winnerDecision: ReportDistribution;
  /**
   * Items whose winning answer was one its author revised or merged. Debate votes once, on the
   * revised answers, so the winner the first answers would have had is not observed.
   */
  winnerWasRevised: ReportRate;
}

export interface ReportJuryDimension {
  dimension: string;
  /** Every juror score on the dimension (n: scores). */
  scores: {
    n: number;
    mean: number | null;
    standardDeviation: number | null;
    min: number | null;
    max: number | null;
  };
  /** Mean over items of the panel's mean score, bootstrap interval (n: items with a score). */
  itemMean: ReportFigure;
  /** Juror scores by value, 1–10. */
  distribution: ReportDistribution;
  /** Krippendorff's α, interval scale, jurors as coders and items as units. */
  alpha: {
    value: number | null;
    /** Items with scores from at least two jurors. */
    n: number;
    pairableValues: number;
    reading: ReportAlphaReading | null;
    /** Percentile bootstrap over items (units resampled with all their scores); null when α is undefined. */
    interval: ReportInterval | null;
    note: string | null;
  };
}

export interface ReportJuror {
  /** The model id; a second seat of the same model on an item is `model#seat`. */
  juror: string;
  /** Items where the juror and another juror scored (n). */
  items: number;
  /** Juror's mean score (over all dimensions) minus the panel's on the same items; positive = lenient. */
  leniency: ReportFigure;
  /** Leniency per dimension (n: items where it scored the dimension). */
  dimensions: { dimension: string; leniency: ReportFigure; raterMean: number; panelMean: number }[];
  /** Verdicts the juror gave (n: its assessments with a verdict). */
  verdicts: ReportDistribution;
  /** Assessments whose scores or verdict could not be parsed over its assessments (n). */
  parseFailures: ReportRate;
  /** Assessments with at least one of the five scores unread, over its assessments (n). */
  scoresUnread: ReportRate;
  /** Assessments whose verdict could not be read, over its assessments (n). */
  verdictUnread: ReportRate;
}

export interface ReportDisagreementItem extends ReportItemLink {
  /** Share of jurors not giving the most common verdict. */
  verdictSplit: number;
  /** Mean over dimensions of the range (max − min) of the jurors' scores. */
  scoreSpread: number;
  verdicts: { APPROVE: number; REVISE: number; REJECT: number };
  finalVerdict: string | null;
}

export interface ReportJury {
  items: number;
  /**
   * The juror assessments (successful juror calls) of those items and which parts could be read.
   * Each part is used where it was read: an assessment's readable scores enter the score figures
   * (dimension means, α, leniency) even when its verdict is unread, and its verdict enters the
   * verdict figures (juror verdicts, Fleiss' κ) even when a score is unread; a juror's parse
   * failures count assessments with either part unread.
   */
  assessments: {
    n: number;
    /** Every one of the five scores read. */
    allScoresRead: number;
    /** At least one score read: these enter the score figures. */
    someScoresRead: number;
    /** The verdict read: these enter the verdict figures. */
    verdictRead: number;
  };
  /** Final verdict per item (the foreman's, else the majority's). */
  verdicts: ReportDistribution;
  /** Verdicts of every juror (n: juror verdicts). */
  jurorVerdicts: ReportDistribution;
  dimensions: ReportJuryDimension[];
  jurors: ReportJuror[];
  /** Fleiss' κ on the jurors' verdicts (n: items with two or more verdicts). */
  fleissKappa: {
    value: number | null;
    n: number;
    ratersPerItem: { min: number; max: number } | null;
    observedAgreement: number | null;
    expectedAgreement: number | null;
    reading: ReportKappaReading | null;
    /** Percentile bootstrap over items (each item with all its verdicts); null when κ is undefined. */
    interval: ReportInterval | null;
    note: string | null;
  };
  /** Most disagreement first (verdict split, then score spread); at most 10. */
  mostDisagreement: ReportDisagreementItem[];
  /** Reference: the expected verdict. */
  reference: ReportReferenceAgreement | null;
}

export interface ReportDelphiMovement {
  /** Round r (≥ 2): panelists' answers compared with their round r − 1 answers and that round's median. */
  round: number;
  /** Panelists who answered afresh in round r with a number in both rounds (n of the figures). */
  n: number;
  /** Share who moved closer to the previous median (those already at it are not counted as moving). */
  movedTowardMedian: ReportRate;
  /** Share who moved away from it. */
  movedAway: ReportRate;
  /** Mean share of the distance to the previous median closed, over panelists not already at it. */
  distanceClosed: ReportFigure;
}

export interface ReportDelphi {
  items: number;
  numericItems: number;
  qualitativeItems: number;
  /** Items that converged over items (n). */
  converged: ReportRate;
  /** Round at which converged items converged (n: converged items). */
  roundsToConvergence: { n: number; mean: number | null; distribution: ReportDistribution };
  /** Rounds run per item (n: items). */
  rounds: ReportDistribution;
  /** Numeric items: coefficient of variation of the final round (n: items where it is defined). */
  finalCv: ReportQuantiles & { mean: number | null; distribution: ReportDistribution };
  /** Qualitative items: share of panelists on the most common answer in the final round, 0–1. */
  finalAgreement: ReportQuantiles & { mean: number | null; distribution: ReportDistribution };
  /** Numeric items, per round from 2 on. */
  movement: ReportDelphiMovement[];
  /** Numeric reference: the expected value; qualitative: the expected answer. */
  reference: ReportReferenceAgreement | null;
}

// ---------------------------------------------------------------------------------------------
// How the numbers were computed

/** One test or interval method a report (or comparison) uses, with what it is used for. */
export interface ReportMethod {
  /** The method's name, e.g. `Wilson score interval`, `exact McNemar test`. */
  name: string;
  /** The figures it gives, in words (e.g. `win rate, failed items`). */
  usedFor: string[];
  /** What is resampled or counted as one observation: `item`, `call`, `answer`, `vote`, `item pair`. */
  unit: string;
  /** Nominal coverage of an interval (0.95); null for a test or an adjustment. */
  confidence: number | null;
  /** Resamples or relabellings; null for a closed-form method. */
  resamples: number | null;
  /** Seed of a resampling method: each figure derives its own stream from it; null otherwise. */
  seed: string | null;
  /** How it is computed, in a sentence. */
  description: string;
}

export interface ReportMethodSummary {
  /** Nominal coverage of every interval, 0.95. */
  confidence: number;
  /** Bootstrap resamples per interval. */
  resamples: number;
  /** Bootstrap seed (the batch id; `a:b` for a comparison), so the same rows give the same figures. */
  seed: string;
  /** Each test and interval method actually used in this report, one entry per method and unit. */
  methods: ReportMethod[];
}

// ---------------------------------------------------------------------------------------------
// The report

export interface BatchReportItems {
  total: number;
  complete: number;
  failed: number;
  cancelled: number;
  /** Queued or running: not in the report. */
  unfinished: number;
}

export interface BatchReport {
  batchId: string;
  name: string | null;
  status: BatchStatus;
  /** True while items are still queued or running: the report covers the finished ones. */
  partial: boolean;
  generatedAt: string;
  /** Modes of the batch's items, in the order of MODE_NAMES. */
  modes: ModeName[];
  items: BatchReportItems;
  /** How intervals were computed, and every test and interval method the report uses. */
  method: ReportMethodSummary;
  council: ReportCouncil | null;
  vote: ReportVote | null;
  debate: ReportDebate | null;
  jury: ReportJury | null;
  delphi: ReportDelphi | null;
  /**
   * Graded batches only (issue 37, item 3): per mode with a panel (council, vote, debate, Delphi)
   * whose complete items carry grades, does the panel beat its best member and a plain majority.
   * Absent when no item is graded.
   */
  panelGain?: ReportPanelGain[];
  /** Every model of the finished items, by cost (then name). */
  models: ReportModelUsage[];
  usage: BatchUsageSummary;
  failures: ReportFailures;
  /** Things a reader should know (e.g. "partial: 40 items are still running"). */
  notes: string[];
}

/** One mode's panel-gain section over its graded complete items. */
export interface ReportPanelGain extends PanelGainSection {
  mode: 'council' | 'vote' | 'debate' | 'delphi';
  /** The section in words (`panelGainSentences`), plain text: the web and the CLI show these. */
  sentences: string[];
}

export interface BatchUsageSummary {
  /** Items that ran, complete or failed (n of the per-item figures); retried items count once. */
  items: number;
  /** Tokens and cost of every model call of the finished items, earlier attempts of retried items included. */
  promptTokens: number;
  completionTokens: number;
  costUsd: number;
  /** Per item that ran (its latest attempt): cost in USD. */
  costPerItemUsd: ReportQuantiles & { mean: number | null };
  /** Per item that ran: from its dispatch to its completion, in ms. */
  itemDurationMs: ReportQuantiles;
  /** Over every successful model call. */
  callLatencyMs: ReportQuantiles;
}

// ---------------------------------------------------------------------------------------------
// Comparison

export interface ComparedBatch {
  batchId: string;
  name: string | null;
  status: BatchStatus;
  partial: boolean;
  items: BatchReportItems;
}

export interface ComparisonDifference {
  /** What is compared, e.g. `win rate`, `verdict share`, `mean score`, `average rank`. */
  measure: string;
  /**
   * Of what: a verdict, a dimension; null for a batch-wide measure. A per-model measure (council's
   * average rank and first-place share, vote's and debate's win rate) is keyed by seat and reads
   * `seat 2: sim/b`, or `seat 2: sim/b:x → sim/b` when the seat held different models in A and B.
   */
  subject: string | null;
  /** The seat (1-based roster position) of a per-model measure; null for other measures. */
  seat: number | null;
  /** The measure in A and in B over the pairs where both items are complete. */
  a: number | null;
  b: number | null;
  /** B − A with a paired bootstrap interval (n: pairs). */
  difference: ReportFigure;
}

export interface ComparisonFlip {
  a: ReportItemLink;
  b: ReportItemLink;
  /** The outcome in each batch: winner model, verdict, final answer. */
  outcomeA: string;
  outcomeB: string;
  /** Council, vote, debate: the winner's seat in each batch (a flip is a change of seat); else null. */
  seatA: number | null;
  seatB: number | null;
}

/** A roster position and the models that held it on the compared items of each batch. */
export interface ComparisonSeat {
  /** 1-based roster position (council: the answer's label, Response A = 1). */
  seat: number;
  a: string[];
  b: string[];
  /** True when the seat held different models in A and B: its figures are compared all the same. */
  changed: boolean;
}

/**
 * Whether one outcome (a seat winning, a verdict) became more or less frequent from A to B: an
 * exact McNemar test on the complete pairs with an outcome on both sides.
 */
export interface ComparisonFlipTest {
  /** The outcome, e.g. `seat 2: sim/b` or `APPROVE`. */
  outcome: string;
  seat: number | null;
  /** Pairs with this outcome in A only, and in B only (the discordant pairs). */
  onlyA: number;
  onlyB: number;
  /** Two-sided exact p-value; 1 when no pair changed. */
  pValue: number;
  /** Holm-adjusted over the outcomes of this comparison when there are several; else null. */
  holmAdjustedPValue: number | null;
  method: string;
  unit: 'item pair';
}

export interface ComparisonUsageRow {
  model: string;
  a: ReportModelUsage | null;
  b: ReportModelUsage | null;
}

export interface BatchComparison {
  a: ComparedBatch;
  b: ComparedBatch;
  mode: ModeName;
  /** `key` when every item of both batches has one, else the item's index. */
  matchedBy: 'key' | 'index';
  /** Pairs matched. */
  pairs: number;
  /** Pairs where both items are complete: the n of the differences. */
  completePairs: number;
  /** Keys found in only one batch (matching by key), the first 20 of each. */
  unmatched: { onlyInA: string[]; onlyInB: string[]; onlyInACount: number; onlyInBCount: number };
  /** What the outcome is for this mode (winner model, verdict, final answer). */
  outcome: string;
  differences: ComparisonDifference[];
  /** Items whose outcome differs between A and B (n: complete pairs with an outcome on both sides). */
  flipped: ReportRate;
  /** The first 50 flipped pairs in A's order. */
  flips: ComparisonFlip[];
  /** Per outcome, whether it changed between A and B (exact McNemar, Holm-adjusted). */
  flipTests: ComparisonFlipTest[];
  /** Council, vote, debate: every seat and its models on each side; empty for other modes. */
  seats: ComparisonSeat[];
  usage: { a: BatchUsageSummary; b: BatchUsageSummary };
  models: ComparisonUsageRow[];
  method: ReportMethodSummary;
  notes: string[];
}
