import type { BatchReport, ReportMethod } from '@conclave/contracts';
import { DEFAULT_CONFIDENCE } from '../bootstrap';

/**
 * "How these numbers were computed": the tests and interval methods a report actually uses, each
 * with what it gives, its unit, and its resamples and seed. Found by walking the finished report
 * (every interval names its method, every test its own), so a section added later is described
 * without being listed here; the field names below only put its figures into words and units.
 */

/** A figure's field name → what a reader calls it and what one observation is. */
const FIELDS: Record<string, { label: string; unit: string }> = {
  winRate: { label: 'win rate', unit: 'item' },
  voteShare: { label: 'vote share', unit: 'item' },
  averageRank: { label: 'average rank', unit: 'item' },
  firstPlaceShare: { label: 'first-place share', unit: 'item' },
  bordaPoints: { label: 'Borda points', unit: 'item' },
  bordaPointsPerItem: { label: 'Borda points per item', unit: 'item' },
  selfPreference: { label: 'self-preference', unit: 'item' },
  itemMean: { label: 'mean score per item', unit: 'item' },
  leniency: { label: 'juror leniency', unit: 'item' },
  kappa: { label: 'Cohen’s κ against the reference', unit: 'item' },
  fleissKappa: { label: 'Fleiss’ κ', unit: 'item' },
  alpha: { label: 'Krippendorff’s α', unit: 'item' },
  observedAgreement: { label: 'agreement with the reference', unit: 'item' },
  matching: { label: 'matches with the reference', unit: 'item' },
  tied: { label: 'tied items', unit: 'item' },
  failedItems: { label: 'failed items', unit: 'item' },
  failures: { label: 'chairman failures', unit: 'item' },
  winnerWasRevised: { label: 'winner was revised', unit: 'item' },
  converged: { label: 'converged items', unit: 'item' },
  meanAbsoluteError: { label: 'mean absolute error', unit: 'item' },
  meanSignedError: { label: 'mean signed error', unit: 'item' },
  meanAbsolutePercentageError: { label: 'mean absolute percentage error', unit: 'item' },
  intervalCoverage: { label: 'interval coverage', unit: 'item' },
  failedCalls: { label: 'failed calls', unit: 'call' },
  parseFailures: { label: 'parse failures', unit: 'answer' },
  unparsedRankings: { label: 'unparsed rankings', unit: 'answer' },
  revise: { label: 'revision decisions', unit: 'answer' },
  stand: { label: 'revision decisions', unit: 'answer' },
  merge: { label: 'revision decisions', unit: 'answer' },
  unparsed: { label: 'revision decisions', unit: 'answer' },
  invalidVotes: { label: 'invalid votes', unit: 'vote' },
  votes: { label: 'votes by position', unit: 'vote' },
  movedTowardMedian: { label: 'panelists moving toward the median', unit: 'panelist answer' },
  movedAway: { label: 'panelists moving away from the median', unit: 'panelist answer' },
  distanceClosed: { label: 'distance closed toward the median', unit: 'panelist answer' },
  flipped: { label: 'flipped outcomes', unit: 'item pair' },
};

/** Keys that say nothing of what a figure is: the walk looks further up for a name. */
const GENERIC = new Set(['difference', 'interval', 'value', 'models', 'jurors', 'dimensions']);

const INTERVALS: Record<string, { name: string; description: string; resampled: boolean }> = {
  'wilson-score': {
    name: 'Wilson score interval',
    description: 'count / n with the Wilson score interval, treating the n units as independent trials.',
    resampled: false,
  },
  'percentile-bootstrap': {
    name: 'percentile bootstrap over items',
    description:
      'Items resampled with replacement (pairs, in a comparison) and the statistic recomputed; the interval is the 2.5th to 97.5th percentile of the resampled statistics.',
    resampled: true,
  },
  'item-cluster-bootstrap': {
    name: 'item-cluster bootstrap',
    description:
      'Items resampled with replacement, each with all its trials (its votes, answers or calls), and the share recomputed as Σ count / Σ n: the trials of one item are not independent. Used where items have several trials each; a share with at most one trial per item keeps the Wilson interval.',
    resampled: true,
  },
  'tango-score': {
    name: 'Tango score interval for a paired difference',
    description:
      'A − B accuracy on the same items from the items where only A and only B was right: the values of the difference not rejected by Tango’s (1998) score test, which keeps its coverage with few discordant items and stays within [−1, 1].',
    resampled: false,
  },
  'student-t': {
    name: 'Student t interval',
    description: 'mean ± t(n − 1) · standard error over items, which keeps its coverage at small n.',
    resampled: false,
  },
  'asymptotic-standard-error': {
    name: 'asymptotic standard error',
    description: 'κ ± z · its large-sample standard error (Fleiss, Cohen & Everitt 1969).',
    resampled: false,
  },
};

type Json = Record<string, unknown>;
const isObject = (value: unknown): value is Json =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

class MethodList {
  private readonly entries = new Map<string, ReportMethod>();

  add(key: string, make: () => ReportMethod, ...usedFor: string[]): void {
    let entry = this.entries.get(key);
    if (entry === undefined) {
      entry = make();
      this.entries.set(key, entry);
    }
    for (const u of usedFor) if (!entry.usedFor.includes(u)) entry.usedFor.push(u);
  }

  result(): ReportMethod[] {
    return [...this.entries.values()];
  }
}

/** What a field is called and its unit; an unknown field keeps its name, counted per item. */
function describe(path: readonly string[]): { label: string; unit: string } {
  for (let i = path.length - 1; i >= 0; i--) {
    const known = FIELDS[path[i]];
    if (known) return known;
    if (!/^\d+$/.test(path[i]) && !GENERIC.has(path[i])) {
      return { label: path[i], unit: 'item' };
    }
  }
  return { label: 'figures', unit: 'item' };
}

function walk(value: unknown, path: string[], visit: (node: Json, path: string[]) => void): void {
  if (Array.isArray(value)) {
    value.forEach((v, i) => walk(v, [...path, String(i)], visit));
    return;
  }
  if (!isObject(value)) return;
  visit(value, path);
  for (const [key, child] of Object.entries(value)) walk(child, [...path, key], visit);
}

/** Intervals in a report (every figure or coefficient that carries one). */
export function countIntervals(report: unknown): number {
  let count = 0;
  walk(report, [], (node) => {
    if (isObject(node.interval)) count++;
  });
  return count;
}

/**
 * The multiple-comparison note of a report or comparison that lists many intervals: each is 95 %
 * on its own. Null below MANY_INTERVALS.
 */
export function multipleComparisonNote(intervals: number): string | null {
  if (intervals < MANY_INTERVALS) return null;
  return (
    `This lists ${intervals} intervals, each 95 % on its own and not adjusted for multiple comparisons: ` +
    `about 1 in 20 may miss its true value by chance, so read a single surprising one with care. ` +
    'Where several tests are listed together, their p-values are Holm-adjusted.'
  );
}

const MANY_INTERVALS = 10;

/** The methods of a batch report: every interval's, the position tests, Holm where adjusted. */
export function reportMethods(
  report: Omit<BatchReport, 'method'>,
  options: { resamples: number; seed: string },
): ReportMethod[] {
  const list = new MethodList();
  // The panel-gain sections list their own methods (added below): not walked as figures.
  const { panelGain, ...figures } = report;
  walk(figures, [], (node, path) => {
    const interval = node.interval;
    if (isObject(interval) && typeof interval.method === 'string') {
      const method = INTERVALS[interval.method];
      const described = describe(path);
      const { label } = described;
      // A share clustered by item resamples items, whatever its trials are (votes, answers, calls).
      const unit = interval.method === 'item-cluster-bootstrap' ? 'item' : described.unit;
      const confidence = typeof interval.confidence === 'number' ? interval.confidence : DEFAULT_CONFIDENCE;
      list.add(
        `${interval.method}\u0000${unit}`,
        () => ({
          name: method?.name ?? (interval.method as string),
          usedFor: [],
          unit,
          confidence,
          resamples: method?.resampled ? options.resamples : null,
          seed: method?.resampled ? options.seed : null,
          description: method?.description ?? '',
        }),
        label,
      );
    }
    const test = node.test;
    if (isObject(test) && test.run === true && typeof test.method === 'string') {
      list.add(
        `position\u0000${test.method}`,
        () => ({
          name: test.method as string,
          usedFor: [],
          unit: typeof test.unit === 'string' ? test.unit : 'item',
          confidence: null,
          resamples: typeof test.resamples === 'number' ? test.resamples : null,
          // Each group's seed is the report's seed with `:positions:<answers shown>`.
          seed: options.seed,
          description:
            'Each item’s votes are relabelled together (one random permutation of the item’s label order) and the χ² of the pooled votes recomputed; p = (1 + relabellings at least as extreme) / (1 + relabellings).',
        }),
        'position bias',
      );
      if (typeof test.holmAdjustedPValue === 'number') {
        list.add('holm\u0000position', () => holm('item'), 'position bias across groups of items');
      }
    }
  });
  for (const section of panelGain ?? []) {
    for (const method of section.method.methods) {
      // Per mode its seed (`<seed>:<mode>`) differs: one entry per method and mode.
      list.add(
        `panel-gain\u0000${section.mode}\u0000${method.name}`,
        () => ({ ...method, usedFor: [] }),
        ...method.usedFor.map((u) => `panel gain (${section.mode}): ${u}`),
      );
    }
  }
  return list.result();
}

const holm = (unit: string): ReportMethod => ({
  name: 'Holm step-down adjustment',
  usedFor: [],
  unit,
  confidence: null,
  resamples: null,
  seed: null,
  description:
    'The family’s p-values sorted ascending, the i-th smallest multiplied by (m − i + 1), kept non-decreasing and capped at 1: the chance of any false alarm in the family stays at 5 %.',
});

/**
 * The methods of a comparison: paired bootstrap, Wilson for the flipped share, McNemar, Holm, and
 * the item-cluster bootstrap where a side's failed-call shares are clustered by item.
 */
export function comparisonMethods(options: {
  resamples: number;
  seed: string;
  differences: boolean;
  flipTests: number;
  clusteredFailedCalls?: boolean;
}): ReportMethod[] {
  const methods: ReportMethod[] = [];
  if (options.differences) {
    methods.push({
      name: 'paired percentile bootstrap over item pairs',
      usedFor: ['B − A differences'],
      unit: 'item pair',
      confidence: DEFAULT_CONFIDENCE,
      resamples: options.resamples,
      seed: options.seed,
      description:
        'Matched pairs resampled with replacement, keeping each item’s difficulty on both sides, and the mean of B − A recomputed; the interval is the 2.5th to 97.5th percentile.',
    });
  }
  methods.push({
    name: INTERVALS['wilson-score'].name,
    usedFor: ['flipped outcomes'],
    unit: 'item pair',
    confidence: DEFAULT_CONFIDENCE,
    resamples: null,
    seed: null,
    description: INTERVALS['wilson-score'].description,
  });
  if (options.flipTests > 0) {
    methods.push({
      name: 'exact McNemar test',
      usedFor: ['flips per outcome'],
      unit: 'item pair',
      confidence: null,
      resamples: null,
      seed: null,
      description:
        'Per outcome, the pairs that had it in A only and in B only: without a change each is equally likely, so the count in A only is Binomial(discordant pairs, ½), tested two-sided.',
    });
  }
  if (options.flipTests > 1) methods.push({ ...holm('item pair'), usedFor: ['flips per outcome'] });
  if (options.clusteredFailedCalls) {
    const cluster = INTERVALS['item-cluster-bootstrap'];
    methods.push({
      name: cluster.name,
      usedFor: ['failed calls'],
      unit: 'item',
      confidence: DEFAULT_CONFIDENCE,
      resamples: options.resamples,
      // Each side's seed is the comparison's with `:a` or `:b`, then `:failed-calls:<model>`.
      seed: options.seed,
      description: cluster.description,
    });
  }
  return methods;
}
