import type { ReportFigure, ReportMethod } from '@conclave/contracts';
import {
  bootstrapItems,
  bootstrapMean,
  DEFAULT_BOOTSTRAP_RESAMPLES,
  DEFAULT_CONFIDENCE,
  DEFAULT_SEED,
  pairedBootstrap,
  SINGLE_ITEM_NO_INTERVAL,
  type BootstrapEstimate,
  type BootstrapOptions,
} from '../bootstrap';
import { exactMcNemar, holmAdjust } from '../inference/exact';
import { tangoPairedInterval } from '../inference/paired-difference';
import { bootstrapFigure, pooledRate, rate, reportInterval } from './figures';

/**
 * Panel gain (issue 37, item 3): does the panel's final answer beat its best member alone, and a
 * plain majority of the members' own answers? Pure functions over one plain record per graded
 * item (`PanelGainItem`), so the batch report can build the records from stored rows and grades
 * and call `panelGain` once; `panelGainSentences` and `panelGainMarkdown` put the result in words.
 *
 * Conventions (as the other report sections): every accuracy is count / items with a Wilson
 * interval; accuracy differences are paired over items (the unit) with Tango's score interval; a
 * figure that cannot be computed has `value: null` and a `note` saying why; no interval is
 * zero-width (one item, or no spread over the resamples, gives `interval: null` and a note).
 */

import type {
  GainGrade,
  PanelGainMember,
  PanelGainItem,
  PanelGainOptions,
  GradedAccuracy,
  SeatAccuracy,
  GainTest,
  PairedAccuracyDifference,
  BestMember,
  HeldOutBest,
  MajorityBaseline,
  RevisionGain,
  DelphiGain,
  PerCorrect,
  PanelGainSection,
} from '@conclave/contracts';

/** Fewer items than this leave a half too small to pick a member on. */
export const MIN_ITEMS_FOR_HELD_OUT_BEST = 4;

/** Below this many discordant items no exact two-sided test at 5 % can reject (2 · ½⁵ = 0.0625). */
export const MIN_DISCORDANT_FOR_TEST = 6;

export const MAJORITY_RULE =
  'right when more than half of the seats on the item gave an answer graded correct; a tie, a split ' +
  'vote, or a majority of wrong, unreadable or missing answers counts as not correct';

export const BEST_MEMBER_NOTE =
  'The best member is chosen on these same items, which flatters it (the highest of several ' +
  'noisy accuracies is on average above that member’s true accuracy), so the panel’s gain over ' +
  'it is if anything understated; its interval and test do not allow for the choice.';

export const UNREADABLE_RULE =
  'Unreadable and missing answers count as not correct: every accuracy is correct answers over ' +
  'all items, and the unreadable and missing counts are given beside it.';

const correctOf = (grade: GainGrade | undefined): boolean => grade === 'correct';

/** Grades counted over items. */
export interface GradeTally {
  correct: number;
  incorrect: number;
  unreadable: number;
  missing: number;
}

const emptyTally = (): GradeTally => ({ correct: 0, incorrect: 0, unreadable: 0, missing: 0 });

function count(tally: GradeTally, grade: GainGrade | undefined): void {
  if (grade === 'correct') tally.correct++;
  else if (grade === 'incorrect') tally.incorrect++;
  else if (grade === 'unreadable') tally.unreadable++;
  else tally.missing++;
}

/** An accuracy from a tally over all items; null value when nothing could be read. */
export function gradedAccuracy(tally: GradeTally, confidence = DEFAULT_CONFIDENCE): GradedAccuracy {
  const n = tally.correct + tally.incorrect + tally.unreadable + tally.missing;
  const base = { unreadable: tally.unreadable, missing: tally.missing };
  if (n === 0) return { ...rate(0, 0, confidence), note: 'no items', ...base };
  if (tally.correct + tally.incorrect === 0) {
    return {
      value: null,
      n,
      count: 0,
      interval: null,
      note: `no answer could be read (${tally.unreadable} unreadable, ${tally.missing} missing)`,
      ...base,
    };
  }
  if (n < 2) {
    return { ...rate(tally.correct, n, confidence), interval: null, note: SINGLE_ITEM_NO_INTERVAL, ...base };
  }
  return { ...rate(tally.correct, n, confidence), ...base };
}

/** Whether a strict majority of the item's seats answered correctly (`MAJORITY_RULE`). */
export function majorityCorrect(members: readonly PanelGainMember[]): boolean {
  const right = members.filter((m) => m.grade === 'correct').length;
  return right * 2 > members.length;
}

/**
 * The exact McNemar test on `onlyA` vs `onlyB`, or why not: under `MIN_DISCORDANT_FOR_TEST`
 * discordant items it cannot reach 5 % and is not run.
 */
export function gainTest(onlyA: number, onlyB: number, items: number): GainTest {
  const method = 'exact McNemar (two-sided binomial test on the discordant pairs)' as const;
  const discordant = onlyA + onlyB;
  if (items < 2) {
    return {
      run: false,
      pValue: null,
      holmAdjustedPValue: null,
      method,
      reason: items === 0 ? 'no items' : 'a single item gives no test',
    };
  }
  if (discordant < MIN_DISCORDANT_FOR_TEST) {
    return {
      run: false,
      pValue: null,
      holmAdjustedPValue: null,
      method,
      reason:
        `${discordant === 0 ? 'no item' : `only ${discordant} item${discordant === 1 ? '' : 's'}`} ` +
        'where exactly one of the two was right; ' +
        `an exact two-sided test needs at least ${MIN_DISCORDANT_FOR_TEST} to be able to reach 5 %`,
    };
  }
  return {
    run: true,
    pValue: exactMcNemar(onlyA, onlyB).pValue,
    holmAdjustedPValue: null,
    method,
    reason: null,
  };
}

/**
 * A − B accuracy over the same items: `a[i]`, `b[i]` whether A and B were right on item i. The
 * interval is Tango's score interval for a paired difference (`tangoPairedInterval`: closed form,
 * no resampling, never zero-width), none for a single item; the test exact McNemar on the items
 * where exactly one was right.
 */
export function pairedAccuracyDifference(
  labels: { a: string; b: string },
  a: readonly boolean[],
  b: readonly boolean[],
  confidence = DEFAULT_CONFIDENCE,
  defined = true,
): PairedAccuracyDifference {
  if (a.length !== b.length) throw new RangeError('paired answers need the same items');
  let onlyA = 0;
  let onlyB = 0;
  let both = 0;
  let neither = 0;
  for (let i = 0; i < a.length; i++) {
    if (a[i] && b[i]) both++;
    else if (a[i]) onlyA++;
    else if (b[i]) onlyB++;
    else neither++;
  }
  const n = a.length;
  let difference: ReportFigure;
  if (n === 0) difference = { value: null, n: 0, interval: null, note: 'no items' };
  else if (!defined) {
    difference = { value: null, n, interval: null, note: 'no answer of one side could be read' };
  } else if (n < 2) {
    difference = { value: (onlyA - onlyB) / n, n, interval: null, note: SINGLE_ITEM_NO_INTERVAL };
  } else {
    difference = {
      value: (onlyA - onlyB) / n,
      n,
      interval: reportInterval(tangoPairedInterval(onlyA, onlyB, n, confidence)),
      note: null,
    };
  }
  const test = defined
    ? gainTest(onlyA, onlyB, n)
    : notRun(n === 0 ? 'no items' : 'no answer of one side could be read');
  return { a: labels.a, b: labels.b, difference, onlyA, onlyB, both, neither, test };
}

const notRun = (reason: string): GainTest => ({
  run: false,
  pValue: null,
  holmAdjustedPValue: null,
  method: 'exact McNemar (two-sided binomial test on the discordant pairs)',
  reason,
});

/** Σ x / Σ c over items resampled; null when no correct answer was drawn. */
function perCorrect(
  values: readonly (number | null | undefined)[],
  correct: readonly boolean[],
  options: BootstrapOptions,
  what: string,
): PerCorrect {
  const x: number[] = [];
  const c: number[] = [];
  values.forEach((v, i) => {
    if (typeof v === 'number' && Number.isFinite(v)) {
      x.push(v);
      c.push(correct[i] ? 1 : 0);
    }
  });
  const right = c.reduce((s, v) => s + v, 0);
  const items = x.length;
  if (items === 0) {
    return {
      items,
      correct: 0,
      value: { value: null, n: 0, interval: null, note: `no item has its ${what}` },
    };
  }
  if (right === 0) {
    return {
      items,
      correct: 0,
      value: { value: null, n: items, interval: null, note: 'no correct answers' },
    };
  }
  const estimate = bootstrapItems(
    items,
    (indices) => {
      let sx = 0;
      let sc = 0;
      for (let i = 0; i < indices.length; i++) {
        sx += x[indices[i]];
        sc += c[indices[i]];
      }
      return sc === 0 ? null : sx / sc;
    },
    options,
  );
  return { items, correct: right, value: bootstrapFigure(estimate) };
}

function seatModels(items: readonly PanelGainItem[]): Map<number, string[]> {
  const seats = new Map<number, Set<string>>();
  for (const item of items) {
    for (const member of item.members) {
      let models = seats.get(member.seat);
      if (models === undefined) {
        models = new Set();
        seats.set(member.seat, models);
      }
      models.add(member.model);
    }
  }
  return new Map([...seats].sort((x, y) => x[0] - y[0]).map(([seat, models]) => [seat, [...models].sort()]));
}

const seatName = (seat: number, model: string) => `seat ${seat}, ${model}`;

export const HELD_OUT_NOTE =
  'The best member picked on the other half of the items is chosen on the odd-position items and ' +
  'scored on the even-position ones, and the other way round: its accuracy and the panel’s gain ' +
  'over it carry no optimism from the choice.';

/** The seat with the most correct answers on the odd (or even) positions (ties: the lowest seat). */
function pick(seats: readonly number[], grades: Map<number, GainGrade[]>, odd: boolean): number {
  let best = seats[0];
  let most = -1;
  for (const seat of seats) {
    const column = grades.get(seat) ?? [];
    let right = 0;
    for (let i = odd ? 1 : 0; i < column.length; i += 2) if (column[i] === 'correct') right++;
    if (right > most) {
      best = seat;
      most = right;
    }
  }
  return best;
}

/** `HeldOutBest`, or null with fewer than two seats or `MIN_ITEMS_FOR_HELD_OUT_BEST` items. */
function heldOut(
  seats: readonly number[],
  grades: Map<number, GainGrade[]>,
  panelRight: readonly boolean[],
  panel: GradedAccuracy,
  confidence: number,
): HeldOutBest | null {
  if (seats.length < 2 || panelRight.length < MIN_ITEMS_FOR_HELD_OUT_BEST) return null;
  const pickedOnOdd = pick(seats, grades, true);
  const pickedOnEven = pick(seats, grades, false);
  const tally = emptyTally();
  const right: boolean[] = [];
  for (let i = 0; i < panelRight.length; i++) {
    // Even positions are scored with the seat picked on the odd ones, and the other way round.
    const grade = grades.get(i % 2 === 0 ? pickedOnOdd : pickedOnEven)?.[i] ?? null;
    count(tally, grade);
    right.push(correctOf(grade));
  }
  const accuracy = gradedAccuracy(tally, confidence);
  const seatsText =
    pickedOnOdd === pickedOnEven
      ? `seat ${pickedOnOdd} both times`
      : `seats ${pickedOnEven} and ${pickedOnOdd}`;
  return {
    pickedOnOdd,
    pickedOnEven,
    accuracy,
    panelMinus: pairedAccuracyDifference(
      { a: 'the panel', b: `its best member picked on the other half of the items (${seatsText})` },
      panelRight,
      right,
      confidence,
      panel.value !== null && accuracy.value !== null,
    ),
  };
}

function revisionGain(items: readonly PanelGainItem[], options: BootstrapOptions): RevisionGain | null {
  if (!items.some((item) => item.members.some((m) => m.revisedGrade !== undefined))) return null;
  const beforeClusters: { successes: number; trials: number }[] = [];
  const afterClusters: { successes: number; trials: number }[] = [];
  let fixed = 0;
  let broke = 0;
  let unreadableBefore = 0;
  let unreadableAfter = 0;
  let answers = 0;
  for (const item of items) {
    let trials = 0;
    let before = 0;
    let after = 0;
    for (const m of item.members) {
      if (m.revisedGrade === undefined || m.grade === null || m.revisedGrade === null) continue;
      trials++;
      const wasRight = correctOf(m.grade);
      const isRight = correctOf(m.revisedGrade);
      if (wasRight) before++;
      if (isRight) after++;
      if (!wasRight && isRight) fixed++;
      if (wasRight && !isRight) broke++;
      if (m.grade === 'unreadable') unreadableBefore++;
      if (m.revisedGrade === 'unreadable') unreadableAfter++;
    }
    if (trials === 0) continue;
    answers += trials;
    beforeClusters.push({ successes: before, trials });
    afterClusters.push({ successes: after, trials });
  }
  const n = beforeClusters.length;
  const seed = String(options.seed ?? DEFAULT_SEED);
  let change: ReportFigure;
  if (n === 0)
    change = { value: null, n: 0, interval: null, note: 'no member gave both a first and a revised answer' };
  else {
    const estimate = bootstrapItems(
      n,
      (indices) => {
        let diff = 0;
        let trials = 0;
        for (let i = 0; i < indices.length; i++) {
          const j = indices[i];
          diff += afterClusters[j].successes - beforeClusters[j].successes;
          trials += beforeClusters[j].trials;
        }
        return diff / trials;
      },
      { ...options, seed: `${seed}:gain:revision` },
    );
    change = clusterFigure(
      estimate,
      beforeClusters.some((c) => c.trials > 1),
    );
  }
  return {
    answers,
    items: n,
    before: pooledRate(beforeClusters, { ...options, seed: `${seed}:gain:revision:before` }),
    after: pooledRate(afterClusters, { ...options, seed: `${seed}:gain:revision:after` }),
    change,
    fixed,
    broke,
    unreadableBefore,
    unreadableAfter,
  };
}

/** A bootstrap over items of a share pooled over their answers: the item-cluster bootstrap. */
function clusterFigure(estimate: BootstrapEstimate, clustered: boolean): ReportFigure {
  const figure = bootstrapFigure(estimate);
  if (figure.interval === null || !clustered) return figure;
  return { ...figure, interval: { ...figure.interval, method: 'item-cluster-bootstrap' } };
}

function delphiGain(items: readonly PanelGainItem[], options: BootstrapOptions): DelphiGain | null {
  const present = items.filter((item) => item.delphi !== undefined && item.delphi !== null);
  if (present.length === 0) return null;
  const first: number[] = [];
  const final: number[] = [];
  for (const item of present) {
    const f = item.delphi?.firstMedianError;
    const l = item.delphi?.finalError;
    if (typeof f === 'number' && Number.isFinite(f) && typeof l === 'number' && Number.isFinite(l)) {
      first.push(f);
      final.push(l);
    }
  }
  const seed = String(options.seed ?? DEFAULT_SEED);
  let closer = 0;
  let further = 0;
  let unchanged = 0;
  for (let i = 0; i < first.length; i++) {
    if (final[i] < first[i]) closer++;
    else if (final[i] > first[i]) further++;
    else unchanged++;
  }
  return {
    items: first.length,
    firstMedianError: bootstrapFigure(
      bootstrapMean(first, { ...options, seed: `${seed}:gain:delphi:first` }),
    ),
    finalError: bootstrapFigure(bootstrapMean(final, { ...options, seed: `${seed}:gain:delphi:final` })),
    change: bootstrapFigure(
      pairedBootstrap(final, first, { ...options, seed: `${seed}:gain:delphi:change` }),
    ),
    closer,
    further,
    unchanged,
  };
}

/**
 * The panel-gain section over graded items (see the types for each figure). Bootstrap seeds are
 * the options' seed with `:gain:revision` (`:before`, `:after`),
 * `:gain:delphi:first|final|change`, `:gain:cost`, `:gain:tokens`, `:gain:latency`.
 */
export function panelGain(items: readonly PanelGainItem[], options: PanelGainOptions = {}): PanelGainSection {
  const confidence = options.confidence ?? DEFAULT_CONFIDENCE;
  const resamples = options.resamples ?? DEFAULT_BOOTSTRAP_RESAMPLES;
  const seed = options.seed ?? DEFAULT_SEED;
  const bootstrap = (suffix: string): BootstrapOptions => ({
    confidence,
    resamples,
    seed: `${seed}:gain:${suffix}`,
  });
  const models = seatModels(items);
  const seats = [...models.keys()];

  // Per item: each seat's own answer right, the majority's, the panel's.
  const seatRight = new Map<number, boolean[]>(seats.map((s) => [s, []]));
  const seatGrades = new Map<number, GainGrade[]>(seats.map((s) => [s, []]));
  const seatTally = new Map<number, GradeTally>(seats.map((s) => [s, emptyTally()]));
  const majorityRight: boolean[] = [];
  const majorityTally = emptyTally();
  const panelRight: boolean[] = [];
  const panelTally = emptyTally();
  let anyReadable = false;
  for (const item of items) {
    const bySeat = new Map(item.members.map((m) => [m.seat, m]));
    for (const seat of seats) {
      const grade = bySeat.get(seat)?.grade ?? null;
      seatRight.get(seat)?.push(correctOf(grade));
      seatGrades.get(seat)?.push(grade);
      const tally = seatTally.get(seat);
      if (tally) count(tally, grade);
      if (grade === 'correct' || grade === 'incorrect') anyReadable = true;
    }
    const majority = majorityCorrect(item.members);
    majorityRight.push(majority);
    const readable = item.members.some((m) => m.grade === 'correct' || m.grade === 'incorrect');
    if (majority) majorityTally.correct++;
    else if (readable) majorityTally.incorrect++;
    else if (item.members.some((m) => m.grade === 'unreadable')) majorityTally.unreadable++;
    else majorityTally.missing++;
    panelRight.push(correctOf(item.panel));
    count(panelTally, item.panel);
    if (item.panel === 'correct' || item.panel === 'incorrect') anyReadable = true;
  }

  const members: SeatAccuracy[] = seats.map((seat) => ({
    seat,
    model: (models.get(seat) ?? []).join(', '),
    accuracy: gradedAccuracy(seatTally.get(seat) ?? emptyTally(), confidence),
  }));
  let best: BestMember | null = null;
  for (const m of members) {
    if (m.accuracy.value === null) continue;
    if (best === null || m.accuracy.value > (best.accuracy.value ?? -1)) {
      best = {
        seat: m.seat,
        model: m.model,
        accuracy: m.accuracy,
        selection: 'in-sample',
        note: members.length > 1 ? BEST_MEMBER_NOTE : 'the only member: nothing was chosen',
      };
    }
  }
  if (best === null && members.length > 0) {
    const m = members[0];
    best = {
      seat: m.seat,
      model: m.model,
      accuracy: m.accuracy,
      selection: 'in-sample',
      note: members.length > 1 ? BEST_MEMBER_NOTE : 'the only member: nothing was chosen',
    };
  }
  const panel = gradedAccuracy(panelTally, confidence);
  const majority: MajorityBaseline = {
    accuracy: gradedAccuracy(majorityTally, confidence),
    rule: MAJORITY_RULE,
  };

  const panelMinusBest =
    best === null
      ? null
      : pairedAccuracyDifference(
          { a: 'the panel', b: `its best member alone (${seatName(best.seat, best.model)})` },
          panelRight,
          seatRight.get(best.seat) ?? [],
          confidence,
          panel.value !== null && best.accuracy.value !== null,
        );
  const heldOutBest = heldOut(seats, seatGrades, panelRight, panel, confidence);
  const panelMinusMajority = pairedAccuracyDifference(
    { a: 'the panel', b: 'a plain majority of the members’ own answers' },
    panelRight,
    majorityRight,
    confidence,
    panel.value !== null && majority.accuracy.value !== null,
  );
  // Holm over the tests this section ran (a family of at most three).
  const tests = [panelMinusBest?.test ?? null, heldOutBest?.panelMinus.test ?? null, panelMinusMajority.test];
  const ran = tests.filter((t): t is GainTest => t !== null && t.run);
  const adjusted = ran.length > 1 ? holmAdjust(ran.map((t) => t.pValue)) : null;
  const adjust = (difference: PairedAccuracyDifference): PairedAccuracyDifference => {
    const i = ran.indexOf(difference.test);
    if (adjusted === null || i < 0) return difference;
    return { ...difference, test: { ...difference.test, holmAdjustedPValue: adjusted[i] } };
  };

  const revision = revisionGain(items, { confidence, resamples, seed });
  const delphi = delphiGain(items, { confidence, resamples, seed });
  const perCorrectFigures = {
    costUsd: perCorrect(
      items.map((i) => i.costUsd),
      panelRight,
      bootstrap('cost'),
      'cost',
    ),
    tokens: perCorrect(
      items.map((i) => i.tokens),
      panelRight,
      bootstrap('tokens'),
      'tokens',
    ),
    latencyMs: perCorrect(
      items.map((i) => i.latencyMs),
      panelRight,
      bootstrap('latency'),
      'latency',
    ),
  };

  const reason = items.length === 0 ? 'no graded items' : anyReadable ? null : 'no answer could be read';
  const notes: string[] = [UNREADABLE_RULE, `A plain majority is ${MAJORITY_RULE}.`];
  if (best !== null && members.length > 1) notes.push(BEST_MEMBER_NOTE);
  if (heldOutBest !== null) notes.push(HELD_OUT_NOTE);
  if (revision !== null) {
    notes.push(
      'Revisions are counted per member answer; the answers of one item are not independent, so their intervals resample items (item-cluster bootstrap) and no exact test is run on them.',
    );
  }
  for (const m of members.filter((x) => x.model.includes(', '))) {
    notes.push(`Seat ${m.seat} held more than one model across items; its accuracy is the seat’s.`);
  }
  const section: Omit<PanelGainSection, 'method'> = {
    items: items.length,
    reason,
    members,
    best,
    majority,
    panel,
    panelMinusBest: panelMinusBest === null ? null : adjust(panelMinusBest),
    heldOutBest: heldOutBest === null ? null : { ...heldOutBest, panelMinus: adjust(heldOutBest.panelMinus) },
    panelMinusMajority: adjust(panelMinusMajority),
    revision,
    delphi,
    perCorrect: perCorrectFigures,
    notes,
  };
  return {
    ...section,
    method: { confidence, resamples, seed, methods: panelGainMethods(section, { resamples, seed }) },
  };
}

/** "How these numbers were computed" for the section: only the methods it used. */
export function panelGainMethods(
  section: Omit<PanelGainSection, 'method'>,
  options: { resamples: number; seed: string },
): ReportMethod[] {
  const methods: ReportMethod[] = [];
  const confidence = section.panel.interval?.confidence ?? DEFAULT_CONFIDENCE;
  const wilson = [
    section.panel,
    section.majority.accuracy,
    ...section.members.map((m) => m.accuracy),
    ...(section.heldOutBest ? [section.heldOutBest.accuracy] : []),
  ].some((a) => a.interval !== null);
  if (wilson) {
    methods.push({
      name: 'Wilson score interval',
      usedFor: ['accuracy of each member, the majority and the panel'],
      unit: 'item',
      confidence,
      resamples: null,
      seed: null,
      description:
        'correct answers / items with the Wilson score interval, treating the items as independent trials.',
    });
  }
  const compared = [
    { label: 'panel − best member', difference: section.panelMinusBest },
    {
      label: 'panel − best member picked on the other half',
      difference: section.heldOutBest?.panelMinus ?? null,
    },
    { label: 'panel − majority', difference: section.panelMinusMajority },
  ];
  const withInterval = compared.filter((c) => c.difference?.difference.interval);
  if (withInterval.length > 0) {
    methods.push({
      name: 'Tango score interval for a paired difference',
      usedFor: withInterval.map((c) => c.label),
      unit: 'item',
      confidence,
      resamples: null,
      seed: null,
      description:
        'A − B accuracy on the same items, (only A right − only B right) / items; the interval holds the differences not rejected by Tango’s (1998) score test, which keeps its coverage with few discordant items and stays within [−1, 1].',
    });
  }
  const tests = [
    section.panelMinusBest,
    section.heldOutBest?.panelMinus ?? null,
    section.panelMinusMajority,
  ].filter((d): d is PairedAccuracyDifference => d !== null && d.test.run);
  if (tests.length > 0) {
    methods.push({
      name: 'exact McNemar test',
      usedFor: tests.map((d) => `${d.a} vs ${d.b}`),
      unit: 'item',
      confidence: null,
      resamples: null,
      seed: null,
      description:
        'The items where exactly one of the two was right: without a difference each is equally likely to go either way, so the count of one side is Binomial(discordant items, ½), tested two-sided.',
    });
  }
  if (tests.length > 1) {
    methods.push({
      name: 'Holm step-down adjustment',
      usedFor: ['the panel-gain tests'],
      unit: 'item',
      confidence: null,
      resamples: null,
      seed: null,
      description:
        'The family’s p-values sorted ascending, the i-th smallest multiplied by (m − i + 1), kept non-decreasing and capped at 1.',
    });
  }
  const clustered = [section.revision?.before, section.revision?.after, section.revision?.change].some(
    (f) => f?.interval?.method === 'item-cluster-bootstrap',
  );
  if (clustered) {
    methods.push({
      name: 'item-cluster bootstrap',
      usedFor: ['accuracy before and after revision, and its change'],
      unit: 'item',
      confidence,
      resamples: options.resamples,
      seed: options.seed,
      description:
        'Items resampled with replacement, each with all its members’ answers, and the share recomputed as Σ correct / Σ answers: the answers of one item are not independent (seeds: the report’s with :gain:revision, :gain:revision:before, :gain:revision:after).',
    });
  }
  const resampled = [
    section.delphi?.firstMedianError,
    section.delphi?.finalError,
    section.delphi?.change,
    section.perCorrect.costUsd.value,
    section.perCorrect.tokens.value,
    section.perCorrect.latencyMs.value,
  ].filter((f): f is ReportFigure => f !== undefined && f.interval?.method === 'percentile-bootstrap');
  if (resampled.length > 0) {
    methods.push({
      name: 'percentile bootstrap over items',
      usedFor: [
        ...(section.delphi?.change.interval ? ['Delphi errors'] : []),
        ...(section.perCorrect.costUsd.value.interval ||
        section.perCorrect.tokens.value.interval ||
        section.perCorrect.latencyMs.value.interval
          ? ['cost, tokens and latency per correct answer (Σ measure / Σ correct answers)']
          : []),
      ],
      unit: 'item',
      confidence,
      resamples: options.resamples,
      seed: options.seed,
      description:
        'Items resampled with replacement and the statistic recomputed; the interval is the 2.5th to 97.5th percentile (seeds: the report’s with :gain:delphi:first|final|change, :gain:cost, :gain:tokens, :gain:latency).',
    });
  }
  return methods;
}
