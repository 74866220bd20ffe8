import type { ReportFigure, ReportMethod, ReportRate } from './reports';

/**
 * Panel gain (issue 37, item 3): the input records and the report section of
 * `libs/analysis/src/reports/panel-gain.ts`, here so the batch report's contract can carry the
 * section (`BatchReport.panelGain`).
 */

/** What a grader said of one answer: the verdicts of the contracts' `Grade`. */
export type GainVerdict = 'correct' | 'incorrect' | 'unreadable';

/**
 * One answer's grade; null when there is no answer to grade (the call failed, the seat did not
 * answer on this item).
 */
export type GainGrade = GainVerdict | null;

/** One member seat on one item. */
export interface PanelGainMember {
  /** The seat: 1-based roster position, the same across items of a batch. */
  readonly seat: number;
  /** The model at that seat. */
  readonly model: string;
  /** The grade of the member's own first answer (council and vote stage 1, debate round 1). */
  readonly grade: GainGrade;
  /**
   * Debate only: the grade of the member's revised answer (null when it gave none). Leave it out
   * (undefined) in modes without revisions.
   */
  readonly revisedGrade?: GainGrade;
}

/**
 * One graded item, the input of `panelGain`. Pass the items the report covers (complete items);
 * every figure's denominator is these items.
 */
export interface PanelGainItem {
  /** The item's index in its batch (links and ordering only). */
  readonly index: number;
  /** The item's key, if the batch gave one (links only). */
  readonly key?: string | null;
  /** Every seat of the roster on this item, answered or not. */
  readonly members: readonly PanelGainMember[];
  /** The grade of the panel's final answer (council synthesis, vote or debate winner, Delphi final). */
  readonly panel: GainGrade;
  /**
   * Delphi numeric questions: the absolute error |value − expected| of the first round's median
   * and of the final value; null where there was none.
   */
  readonly delphi?: { readonly firstMedianError: number | null; readonly finalError: number | null } | null;
  /** What the item cost in USD over all its calls, null when unknown. */
  readonly costUsd?: number | null;
  /** Tokens (prompt + completion) over all its calls, null when unknown. */
  readonly tokens?: number | null;
  /** The item's wall-clock duration in milliseconds, null when unknown. */
  readonly latencyMs?: number | null;
}

export interface PanelGainOptions {
  /** The report's seed (the batch id); every bootstrap seed derives from it. Default 'conclave'. */
  readonly seed?: string;
  /** Bootstrap resamples; default 1000. */
  readonly resamples?: number;
  /** Default 0.95. */
  readonly confidence?: number;
}

/**
 * An accuracy: `count` correct answers out of `n` items, Wilson interval. Unreadable and missing
 * answers are in `n` and count as not correct; they are also counted here. `value` is null when
 * no answer at all could be read (a 0 % would describe the grader, not the answers).
 */
export interface GradedAccuracy extends ReportRate {
  /** Answers the grader could not read. */
  readonly unreadable: number;
  /** Items without an answer to grade (failed call, seat absent). */
  readonly missing: number;
}

export interface SeatAccuracy {
  readonly seat: number;
  /** The model at the seat; several joined by ', ' if the seat changed model between items. */
  readonly model: string;
  readonly accuracy: GradedAccuracy;
}

/** An exact test, or why it was not run. */
export interface GainTest {
  readonly run: boolean;
  /** Two-sided exact p-value; null when not run. */
  readonly pValue: number | null;
  /** Holm-adjusted over the tests this section ran; null when not run or when it ran only one. */
  readonly holmAdjustedPValue: number | null;
  readonly method: 'exact McNemar (two-sided binomial test on the discordant pairs)';
  /** Why the test was not run; null when it was. */
  readonly reason: string | null;
}

/** A − B accuracy on the same items, in proportion units (0.083 is 8.3 points). */
export interface PairedAccuracyDifference {
  /** What A and B are, in words ('the panel', 'its best member alone (seat 2, m)'). */
  readonly a: string;
  readonly b: string;
  /** Mean over items of (A right) − (B right), with a paired percentile bootstrap over items. */
  readonly difference: ReportFigure;
  /** Items right by A only, by B only, by both, by neither. */
  readonly onlyA: number;
  readonly onlyB: number;
  readonly both: number;
  readonly neither: number;
  /** Exact McNemar on onlyA vs onlyB. */
  readonly test: GainTest;
}

export interface BestMember {
  readonly seat: number;
  readonly model: string;
  readonly accuracy: GradedAccuracy;
  /** Always 'in-sample': chosen on the very items it is measured on. */
  readonly selection: 'in-sample';
  readonly note: string;
}

/**
 * The best member chosen without looking at the items it is scored on (two-fold cross-fitting):
 * the seat with the most correct answers on the odd-position items is scored on the even-position
 * ones, and the other way round, so its accuracy and the panel's gain over it carry no selection
 * optimism.
 */
export interface HeldOutBest {
  /** The seat picked on the odd-position items (2nd, 4th, …), scored on the even-position ones. */
  readonly pickedOnOdd: number;
  /** The seat picked on the even-position items (1st, 3rd, …), scored on the odd-position ones. */
  readonly pickedOnEven: number;
  /** Correct answers of the seat picked on the other half, over all items. */
  readonly accuracy: GradedAccuracy;
  readonly panelMinus: PairedAccuracyDifference;
}

export interface MajorityBaseline {
  readonly accuracy: GradedAccuracy;
  /** The rule, in words. */
  readonly rule: string;
}

/** Debate: the members' first answers against their revised ones. */
export interface RevisionGain {
  /** Answer pairs compared: a first and a revised answer from the same member on the same item. */
  readonly answers: number;
  readonly items: number;
  /** Share of those first answers that were correct (item-cluster bootstrap when items have several). */
  readonly before: ReportRate;
  readonly after: ReportRate;
  /** after − before, item-cluster bootstrap. */
  readonly change: ReportFigure;
  /** Revisions that turned a not-correct first answer (incorrect or unreadable) into a correct one. */
  readonly fixed: number;
  /** Revisions that turned a correct first answer into a not-correct one. */
  readonly broke: number;
  readonly unreadableBefore: number;
  readonly unreadableAfter: number;
}

/** Delphi numeric questions: error of the first round's median against the final value's. */
export interface DelphiGain {
  /** Items with both errors. */
  readonly items: number;
  readonly firstMedianError: ReportFigure;
  readonly finalError: ReportFigure;
  /** final − first, paired over items: negative when the rounds brought the panel closer. */
  readonly change: ReportFigure;
  readonly closer: number;
  readonly further: number;
  readonly unchanged: number;
}

export interface PerCorrect {
  /** Items with the measure known, and the panel's correct answers among them. */
  readonly items: number;
  readonly correct: number;
  /** Σ measure / Σ correct over those items, percentile bootstrap over items. */
  readonly value: ReportFigure;
}

export interface PanelGainSection {
  readonly items: number;
  /** Why nothing could be compared (no items, no readable answer); null otherwise. */
  readonly reason: string | null;
  /** Each seat's own first answers, by seat. */
  readonly members: readonly SeatAccuracy[];
  /** The seat with the highest accuracy (ties: the lowest seat); null without members. */
  readonly best: BestMember | null;
  readonly majority: MajorityBaseline;
  readonly panel: GradedAccuracy;
  /** null without members. */
  readonly panelMinusBest: PairedAccuracyDifference | null;
  /** The best member picked on the other half of the items; null with fewer than two seats or four items. */
  readonly heldOutBest: HeldOutBest | null;
  readonly panelMinusMajority: PairedAccuracyDifference;
  /** null unless some member has a `revisedGrade` (debate). */
  readonly revision: RevisionGain | null;
  /** null unless some item has Delphi errors. */
  readonly delphi: DelphiGain | null;
  readonly perCorrect: {
    readonly costUsd: PerCorrect;
    readonly tokens: PerCorrect;
    readonly latencyMs: PerCorrect;
  };
  readonly method: {
    readonly confidence: number;
    readonly resamples: number;
    readonly seed: string;
    readonly methods: ReportMethod[];
  };
  readonly notes: string[];
}
