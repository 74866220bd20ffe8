import {
  bootstrapFigure,
  bootstrapMean,
  bootstrapStatistics,
  clusteredRate,
  CohenKappaAccumulator,
  DEFAULT_BOOTSTRAP_RESAMPLES,
  DEFAULT_CONFIDENCE,
  FleissKappaAccumulator,
  FleissKappaItems,
  holmAdjust,
  interpretAlpha,
  interpretKappa,
  IntervalAlphaUnits,
  KrippendorffAlphaAccumulator,
  LeniencyAccumulator,
  pooledRate,
  positionPermutationTest,
  predictionInterval,
  rate,
  reportInterval,
  REPORT_POSITION_RESAMPLES,
  RunningStats,
  standardErrorFigure,
  type BootstrapOptions,
  type ClusterCount,
  type DimensionRating,
  type LongRow,
  type PositionItem,
  numericExpected,
  panelGain,
  panelGainSentences,
} from '@conclave/analysis';
import {
  DIMENSIONS,
  VERDICTS,
  type BatchReport,
  type GainGrade,
  type PanelGainItem,
  type ReportDistribution,
} from '@conclave/contracts';

/**
 * Every figure of a batch report recomputed from the long-format export's rows alone (issue 36).
 *
 * Counts, shares, means, medians, Borda points, errors and the like are plain arithmetic over the
 * rows. Intervals, p-values and agreement coefficients call the analysis library's estimators (the
 * documented methods: Wilson, the item-cluster and percentile bootstraps, Student's t, the
 * position permutation test, Holm, Fleiss' / Cohen's κ, Krippendorff's α), with the confidence,
 * resamples and seeds the report's "How these numbers were computed" section states (the seed is
 * the report's, suffixed per figure as that section documents). Every input to them is built here
 * from the export's rows; nothing is read from the database or the report's figures.
 *
 * `expectEveryFigure` then walks the report: every numeric leaf must have been recomputed and
 * match, so a figure added to the report without a recomputation here fails the test.
 */

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type Expected = { [key: string]: unknown };

const TERMINAL = ['complete', 'failed', 'cancelled'];
const sum = (values: readonly number[]) => values.reduce((a, b) => a + b, 0);
const mean = (values: readonly number[]) => (values.length === 0 ? null : sum(values) / values.length);

/** PostgreSQL's percentile_cont: linear interpolation between the closest ranks. */
export function percentileCont(values: readonly number[], p: number): number | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  const position = p * (sorted.length - 1);
  const low = Math.floor(position);
  const high = Math.ceil(position);
  return sorted[low] + (sorted[high] - sorted[low]) * (position - low);
}

function countBy<T>(values: readonly T[]): Map<T, number> {
  const counts = new Map<T, number>();
  for (const v of values) counts.set(v, (counts.get(v) ?? 0) + 1);
  return counts;
}

function groupBy<T, K>(values: readonly T[], key: (v: T) => K): Map<K, T[]> {
  const groups = new Map<K, T[]>();
  for (const v of values) {
    const k = key(v);
    const list = groups.get(k);
    if (list) list.push(v);
    else groups.set(k, [v]);
  }
  return groups;
}

/** A distribution over the report's own categories (their order is the report's), counted here. */
function distributionOf(actual: ReportDistribution, values: readonly string[]): Expected {
  const counts = countBy(values);
  const n = values.length;
  for (const category of counts.keys()) {
    if (!actual.categories.some((c) => c.category === category))
      throw new Error(`category ${category} is counted in the export but missing from the report`);
  }
  return {
    n,
    categories: actual.categories.map((c) => ({
      category: c.category,
      count: counts.get(c.category) ?? 0,
      share: n === 0 ? null : (counts.get(c.category) ?? 0) / n,
    })),
  };
}

const byName = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/**
 * Leaderboard neighbours: whether each entry's interval overlaps the next one's (null for the last
 * entry or a missing interval), computed on the recomputed intervals in the recomputed order.
 */
function withOverlaps<T extends object>(
  entries: T[],
  interval: (entry: T) => { lower: number; upper: number } | null,
): (T & { overlapsNext: boolean | null })[] {
  return entries.map((entry, i) => {
    const a = interval(entry);
    const b = i + 1 < entries.length ? interval(entries[i + 1]) : null;
    return { ...entry, overlapsNext: a && b ? a.lower <= b.upper && b.lower <= a.upper : null };
  });
}

const seeded = (options: BootstrapOptions, suffix: string): BootstrapOptions => ({
  ...options,
  seed: `${String(options.seed)}${suffix}`,
});

/** The export's rows, split as every report reads them. */
export interface ExportView {
  rows: LongRow[];
  /** The latest attempt of every item, in submission order. */
  items: LongRow[];
  /** Judgement rows of the latest attempts that are complete, per item (submission order). */
  byItem: Map<string, LongRow[]>;
  options: BootstrapOptions;
}

export function viewOf(rows: LongRow[], report: BatchReport): ExportView {
  const items = rows.filter((r) => r.kind === 'item' && r.latest).sort((a, b) => a.index - b.index);
  const complete = new Set(items.filter((i) => i.status === 'complete').map((i) => i.messageId));
  const byItem = new Map<string, LongRow[]>();
  for (const item of items) if (complete.has(item.messageId)) byItem.set(item.messageId, []);
  for (const r of rows) {
    if (r.kind === 'item' || r.kind === 'call') continue;
    byItem.get(r.messageId)?.push(r);
  }
  // The method section states the seed and the resamples; the confidence is the documented 95 %.
  const options: BootstrapOptions = {
    seed: report.method.seed,
    resamples: report.method.resamples,
    confidence: DEFAULT_CONFIDENCE,
  };
  return { rows, items, byItem, options };
}

const link = (item: LongRow) => ({ index: item.index });

// --- what every report has -----------------------------------------------------------------------

export function commonFigures(report: BatchReport, view: ExportView): Expected {
  const { rows, items, options } = view;
  const status = countBy(items.map((i) => i.status));
  const calls = rows.filter((r) => r.kind === 'call' && TERMINAL.includes(r.status));
  const ran = items.filter((i) => i.status === 'complete' || i.status === 'failed');
  const itemCosts = ran.map((i) =>
    sum(calls.filter((c) => c.messageId === i.messageId).map((c) => c.costUsd ?? 0)),
  );
  const durations = ran.map((i) => i.durationMs).filter((d): d is number => d !== null);
  const latencies = calls.filter((c) => c.ok).map((c) => c.latencyMs as number);
  const finished = new Set(items.filter((i) => TERMINAL.includes(i.status)).map((i) => i.messageId));

  // Parse failures: the answers a parser read on finished items' latest attempts, clustered by item.
  const parses = rows.filter(
    (r) =>
      ['ranking', 'vote', 'revision', 'verdict', 'estimate'].includes(r.kind) &&
      r.parsed !== null &&
      finished.has(r.messageId),
  );
  const parseModel = (r: LongRow) => r.model!.split('#')[0];
  const models = new Set([...calls.map((c) => c.model!), ...parses.map(parseModel)]);
  const failed = items.filter((i) => i.status === 'failed');
  const groups = countBy(failed.map((i) => i.error || '(no error recorded)'));

  return {
    items: {
      total: items.length,
      complete: status.get('complete') ?? 0,
      failed: status.get('failed') ?? 0,
      cancelled: status.get('cancelled') ?? 0,
      unfinished: (status.get('queued') ?? 0) + (status.get('running') ?? 0),
    },
    method: {
      confidence: DEFAULT_CONFIDENCE,
      resamples: DEFAULT_BOOTSTRAP_RESAMPLES,
      // Each method: its confidence (intervals) and resamples (bootstraps, the position test).
      methods: report.method.methods.map((m) => ({
        // Tests (the position test, Holm, panel gain's exact McNemar) state no confidence; every
        // interval method 95 %.
        confidence: /permutation|Holm|McNemar/i.test(m.name) ? null : DEFAULT_CONFIDENCE,
        resamples: /bootstrap/i.test(m.name)
          ? DEFAULT_BOOTSTRAP_RESAMPLES
          : /permutation/i.test(m.name)
            ? REPORT_POSITION_RESAMPLES
            : null,
      })),
    },
    usage: {
      items: ran.length,
      promptTokens: sum(calls.map((c) => c.promptTokens ?? 0)),
      completionTokens: sum(calls.map((c) => c.completionTokens ?? 0)),
      costUsd: sum(calls.map((c) => c.costUsd ?? 0)),
      costPerItemUsd: {
        n: ran.length,
        p50: percentileCont(itemCosts, 0.5),
        p95: percentileCont(itemCosts, 0.95),
        mean: mean(itemCosts),
      },
      itemDurationMs: {
        n: durations.length,
        p50: percentileCont(durations, 0.5),
        p95: percentileCont(durations, 0.95),
      },
      callLatencyMs: {
        n: latencies.length,
        p50: percentileCont(latencies, 0.5),
        p95: percentileCont(latencies, 0.95),
      },
    },
    // In the recomputed order (cost, then name); a model the report lists and the export has not fails by name.
    models: [...models]
      .map((model) => ({
        model,
        cost: sum(calls.filter((c) => c.model === model).map((c) => c.costUsd ?? 0)),
      }))
      .sort((a, b) => b.cost - a.cost || byName(a.model, b.model))
      .map((m) => {
        const mine = calls.filter((c) => c.model === m.model);
        const ok = mine.filter((c) => c.ok).map((c) => c.latencyMs as number);
        // Failed calls clustered by item (every attempt's calls of one item together), the clusters
        // in the order the report groups them: by calls, then failures.
        const perItem = [...groupBy(mine, (c) => c.index).values()]
          .map((own): ClusterCount => ({ successes: own.filter((c) => !c.ok).length, trials: own.length }))
          .sort((a, b) => a.trials - b.trials || a.successes - b.successes);
        const parseClusters = [
          ...groupBy(
            parses.filter((p) => parseModel(p) === m.model),
            (p) => p.messageId,
          ).values(),
        ].map((own) => ({ successes: own.filter((p) => p.parsed === false).length, trials: own.length }));
        return {
          model: m.model,
          calls: mine.length,
          failedCalls: pooledRate(perItem, seeded(options, `:failed-calls:${m.model}`)),
          parseFailures: pooledRate(parseClusters, seeded(options, `:parse-failures:${m.model}`)),
          promptTokens: sum(mine.map((c) => c.promptTokens ?? 0)),
          completionTokens: sum(mine.map((c) => c.completionTokens ?? 0)),
          costUsd: sum(mine.map((c) => c.costUsd ?? 0)),
          latencyMs: { n: ok.length, p50: percentileCont(ok, 0.5), p95: percentileCont(ok, 0.95) },
        };
      }),
    failures: {
      failedItems: rate(failed.length, items.filter((i) => TERMINAL.includes(i.status)).length),
      cancelledItems: status.get('cancelled') ?? 0,
      groups: report.failures.groups.map((g) => {
        const own = failed.filter((i) => (i.error || '(no error recorded)') === g.error);
        return { count: groups.get(g.error) ?? 0, examples: own.slice(0, 5).map(link) };
      }),
      otherFailedItems: Math.max(0, failed.length - sum(report.failures.groups.map((g) => g.count))),
    },
  };
}

// --- agreement with a reference ----------------------------------------------------------------

const carries = (reference: string | number | null) =>
  reference !== null &&
  !(typeof reference === 'string' && reference.trim() === '') &&
  !(typeof reference === 'number' && !Number.isFinite(reference));

type Reason = 'failed' | 'cancelled' | 'unfinished' | 'noOutcome' | 'unusableReference';

/** Reference counts of some items: with and without one, and those not compared with the reason. */
class Counts {
  withReference = 0;
  without = 0;
  excluded: Record<Reason, number> = {
    failed: 0,
    cancelled: 0,
    unfinished: 0,
    noOutcome: 0,
    unusableReference: 0,
  };
  excludedItems: LongRow[] = [];

  exclude(item: LongRow, reason: Reason) {
    this.excluded[reason]++;
    this.excludedItems.push(item);
  }

  /** The items of the mode that are not complete. */
  static incomplete(view: ExportView): Counts {
    const counts = new Counts();
    for (const item of view.items) {
      if (view.byItem.has(item.messageId)) continue;
      if (!carries(item.reference)) {
        counts.without++;
        continue;
      }
      counts.withReference++;
      counts.exclude(
        item,
        item.status === 'failed' ? 'failed' : item.status === 'cancelled' ? 'cancelled' : 'unfinished',
      );
    }
    return counts;
  }

  static merge(parts: readonly Counts[]) {
    const excluded = { failed: 0, cancelled: 0, unfinished: 0, noOutcome: 0, unusableReference: 0 };
    for (const p of parts) for (const k of Object.keys(excluded) as Reason[]) excluded[k] += p.excluded[k];
    return {
      itemsWithReference: sum(parts.map((p) => p.withReference)),
      itemsWithoutReference: sum(parts.map((p) => p.without)),
      notCompared: {
        count: sum(Object.values(excluded)),
        ...excluded,
        items: parts
          .flatMap((p) => p.excludedItems)
          .sort((a, b) => a.index - b.index)
          .slice(0, 20)
          .map(link),
      },
    };
  }
}

interface Compared {
  item: LongRow;
  /** The reference as the section reads it; null when the item carries one it cannot read. */
  reference: string | null;
  outcome: string | null;
}

/** Complete items compared by category: matches, Cohen's κ and its confusion matrix. */
function categoricalPart(compared: readonly Compared[], categories: readonly string[], comparedWith: string) {
  const counts = new Counts();
  // The report names κ's two sides in its notes: the reference, and what the section compares with it.
  const cohen = new CohenKappaAccumulator(categories, { a: 'the reference', b: comparedWith });
  let matched = 0;
  let n = 0;
  const mismatches: LongRow[] = [];
  for (const c of compared) {
    if (c.reference === null) {
      if (carries(c.item.reference)) {
        counts.withReference++;
        counts.exclude(c.item, 'unusableReference');
      } else counts.without++;
      continue;
    }
    counts.withReference++;
    if (c.outcome === null) {
      counts.exclude(c.item, 'noOutcome');
      continue;
    }
    n++;
    cohen.add(c.reference, c.outcome);
    if (c.reference === c.outcome) matched++;
    else mismatches.push(c.item);
  }
  const kappa = cohen.result();
  return {
    counts,
    figures: {
      matching: rate(matched, n),
      cohen: {
        kappa: {
          value: kappa.value,
          n: kappa.items,
          interval: reportInterval(kappa.interval),
          note: kappa.reason ?? kappa.intervalReason,
        },
        reading: interpretKappa(kappa.value),
        observedAgreement: rate(matched, n),
        expectedAgreement: kappa.expectedAgreement,
        confusion: kappa.confusion.map((row) => [...row]),
      },
      numeric: null as Expected | null,
      mismatches: mismatches.slice(0, 20).map(link),
    },
  };
}

/** Counts over every item of the mode; matches, Cohen's κ and the confusion matrix over compared ones. */
function referenceFigures(
  view: ExportView,
  section: { reference: { comparedWith: string } | null },
  compared: readonly Compared[],
  categories: readonly string[] = [],
): Expected | null {
  const part = categoricalPart(compared, categories, section.reference?.comparedWith ?? '');
  const incomplete = Counts.incomplete(view);
  if (part.counts.withReference + incomplete.withReference === 0) return null;
  return { ...Counts.merge([incomplete, part.counts]), ...part.figures };
}

const itemOf = (view: ExportView, messageId: string) => view.items.find((i) => i.messageId === messageId)!;
const outcomeOf = (itemRows: readonly LongRow[]) => itemRows.find((x) => x.kind === 'outcome')!;

// --- council -------------------------------------------------------------------------------------

export function councilFigures(report: BatchReport, view: ExportView): Expected {
  const section = report.council!;
  const { byItem, options } = view;
  const rankings = [...byItem.values()].flat().filter((x) => x.kind === 'ranking');
  interface Columns {
    averageRanks: number[];
    firstPlace: number[];
    borda: number[];
    self: number[];
    others: number[];
    ballots: number;
    bordaPoints: number;
  }
  const perModel = new Map<string, Columns>();
  const state = (model: string) => {
    let s = perModel.get(model);
    if (!s) {
      s = { averageRanks: [], firstPlace: [], borda: [], self: [], others: [], ballots: 0, bordaPoints: 0 };
      perModel.set(model, s);
    }
    return s;
  };
  for (const itemRows of byItem.values()) {
    const ranks = itemRows.filter((x) => x.kind === 'rank');
    const m = new Set([
      ...itemRows.filter((x) => x.kind === 'contestant').map((x) => x.model!),
      ...ranks.map((x) => x.subject!),
    ]).size;
    const means = new Map<string, number>();
    for (const [model, own] of groupBy(ranks, (x) => x.subject!)) {
      const points = sum(own.map((x) => m - (x.value as number)));
      state(model).ballots += own.length;
      state(model).bordaPoints += points;
      state(model).borda.push(points);
      means.set(model, mean(own.map((x) => x.value as number))!);
    }
    const best = Math.min(...means.values());
    const leaders = [...means].filter(([, v]) => v - best < 1e-9).map(([model]) => model);
    for (const [model, avg] of means) {
      const s = state(model);
      s.averageRanks.push(avg);
      s.firstPlace.push(leaders.includes(model) ? 1 / leaders.length : 0);
      const own = ranks.filter((x) => x.subject === model);
      const self = own.find((x) => x.model === model);
      const others = own.filter((x) => x.model !== model).map((x) => x.value as number);
      if (self !== undefined && others.length > 0) {
        s.self.push(self.value as number);
        s.others.push(mean(others)!);
      }
    }
  }
  if (
    JSON.stringify(section.models.map((m) => m.model).sort()) !== JSON.stringify([...perModel.keys()].sort())
  )
    throw new Error('council models differ from the export’s');
  const chair = view.rows.filter(
    (x) => x.kind === 'call' && x.latest && x.stage === 'stage3' && TERMINAL.includes(x.status),
  );
  const chairByModel = groupBy(chair, (c) => c.model!);
  return {
    items: byItem.size,
    ballots: rankings.filter((x) => x.parsed).length,
    unparsedRankings: pooledRate(
      [...byItem.values()].map((itemRows) => {
        const own = itemRows.filter((x) => x.kind === 'ranking');
        return { successes: own.filter((x) => !x.parsed).length, trials: own.length };
      }),
      seeded(options, ':share:unparsed-rankings'),
    ),
    // In the recomputed order (average rank, then name), with the neighbours' overlaps.
    models: withOverlaps(
      [...perModel.keys()]
        .map((model) => {
          const s = perModel.get(model)!;
          const differences = s.self.map((v, i) => v - s.others[i]);
          return {
            model,
            itemsRanked: s.averageRanks.length,
            ballots: s.ballots,
            averageRank: bootstrapFigure(bootstrapMean(s.averageRanks, options)),
            firstPlaceShare: bootstrapFigure(bootstrapMean(s.firstPlace, options)),
            bordaPoints: s.bordaPoints,
            bordaPointsPerItem: bootstrapFigure(bootstrapMean(s.borda, options)),
            selfPreference: {
              n: differences.length,
              meanSelfRank: mean(s.self),
              meanOthersRank: mean(s.others),
              difference: bootstrapFigure(bootstrapMean(differences, options)),
            },
          };
        })
        .sort(
          (a, b) =>
            (a.averageRank.value ?? Infinity) - (b.averageRank.value ?? Infinity) || byName(a.model, b.model),
        ),
      (m) => m.averageRank.interval,
    ),
    chairman: {
      itemsReached: chair.length,
      failures: rate(chair.filter((c) => !c.ok).length, chair.length),
      byModel: section.chairman.byModel.map((b) => ({
        items: chairByModel.get(b.model)?.length ?? 0,
        failures: chairByModel.get(b.model)?.filter((c) => !c.ok).length ?? 0,
      })),
    },
    reference: referenceFigures(
      view,
      section,
      [...byItem].map(([messageId, itemRows]) => {
        const item = itemOf(view, messageId);
        return {
          item,
          reference: typeof item.reference === 'string' ? item.reference : null,
          outcome: outcomeOf(itemRows).subject,
        };
      }),
    ),
  };
}

// --- vote and debate -----------------------------------------------------------------------------

export function contestFigures(report: BatchReport, view: ExportView, mode: 'vote' | 'debate'): Expected {
  const section = mode === 'vote' ? report.vote! : report.debate!;
  const { byItem, options } = view;
  const tally = new Map<
    string,
    { contests: number; wins: number; tiedFirst: number; byTiebreak: number; clusters: ClusterCount[] }
  >();
  const brokenBy: string[] = [];
  const invalid: ClusterCount[] = [];
  let decided = 0;
  let tied = 0;
  const positions = new Map<number, PositionItem[]>();
  for (const itemRows of byItem.values()) {
    const outcome = outcomeOf(itemRows);
    const votes = itemRows.filter((x) => x.kind === 'vote');
    const shown = itemRows.filter((x) => x.kind === 'contestant' && x.label !== null);
    const labelModel = new Map(shown.map((x) => [x.label!, x.model!]));
    const validVotes = votes.filter((v) => v.subject !== null);
    invalid.push({ successes: votes.length - validVotes.length, trials: votes.length });
    const labelCounts = countBy(validVotes.map((v) => v.label!));
    const top = Math.max(0, ...labelCounts.values());
    const topLabels = [...labelCounts].filter(([, c]) => c === top).map(([label]) => label);
    const tiedModels = new Set(topLabels.length > 1 ? topLabels.map((l) => labelModel.get(l)) : []);
    for (const model of new Set(itemRows.filter((x) => x.kind === 'contestant').map((x) => x.model!))) {
      const t = tally.get(model) ?? { contests: 0, wins: 0, tiedFirst: 0, byTiebreak: 0, clusters: [] };
      t.contests++;
      if (tiedModels.has(model)) t.tiedFirst++;
      if (outcome.subject === model) {
        t.wins++;
        if (outcome.tiebroken) t.byTiebreak++;
      }
      t.clusters.push({
        successes: validVotes.filter((v) => v.subject === model).length,
        trials: validVotes.length,
      });
      tally.set(model, t);
    }
    if (outcome.subject !== null) {
      decided++;
      if (topLabels.length > 1) tied++;
      if (outcome.tiebroken) brokenBy.push(outcome.method ?? 'unknown');
    }
    if (shown.length >= 2) {
      const group = positions.get(shown.length) ?? [];
      group.push({ answersShown: shown.length, votedPositions: validVotes.map((v) => v.value as number) });
      positions.set(shown.length, group);
    }
  }
  if (JSON.stringify(section.models.map((m) => m.model).sort()) !== JSON.stringify([...tally.keys()].sort()))
    throw new Error(`${mode} models differ from the export’s`);

  // Position bias: each group tested with the item as the unit, Holm across groups.
  const groups = [...positions].sort(([a], [b]) => a - b);
  const tests = groups.map(([k, items]) =>
    positionPermutationTest(items, {
      resamples: REPORT_POSITION_RESAMPLES,
      seed: `${String(options.seed)}:positions:${k}`,
    }),
  );
  const adjusted = tests.length > 1 ? holmAdjust(tests.map((t) => (t.run ? t.pValue : null))) : null;
  const brokenCounts = countBy(brokenBy);

  const expected: Expected = {
    items: byItem.size,
    invalidVotes: pooledRate(invalid, seeded(options, ':share:invalid')),
    // In the recomputed order (win rate, then name): a report listing them otherwise fails by name.
    models: withOverlaps(
      [...tally.keys()]
        .map((model) => {
          const t = tally.get(model)!;
          return {
            model,
            contests: t.contests,
            wins: t.wins,
            winRate: rate(t.wins, t.contests),
            tiedFirst: t.tiedFirst,
            winsByTiebreak: t.byTiebreak,
            voteShare: clusteredRate(t.clusters, seeded(options, `:share:${model}`)),
          };
        })
        .sort((a, b) => (b.winRate.value ?? -1) - (a.winRate.value ?? -1) || byName(a.model, b.model)),
      (m) => m.winRate.interval,
    ),
    ties: {
      tied: rate(tied, decided),
      brokenBy: section.ties.brokenBy.map((c) => ({
        count: brokenCounts.get(c.category) ?? 0,
        share:
          decided === 0 || brokenBy.length === 0
            ? null
            : (brokenCounts.get(c.category) ?? 0) / brokenBy.length,
      })),
    },
    positionBias: {
      computable: true,
      groups: groups.map(([k, items], index) => {
        const test = tests[index];
        return {
          answersShown: k,
          items: items.length,
          validVotes: sum(items.map((i) => i.votedPositions.length)),
          positions: Array.from({ length: k }, (_, i) => ({
            position: i + 1,
            votes: pooledRate(
              items.map((item) => ({
                successes: item.votedPositions.filter((p) => p === i + 1).length,
                trials: item.votedPositions.length,
              })),
              seeded(options, `:share:position:${k}:${i + 1}`),
            ),
            expectedShare: 1 / k,
          })),
          test: test.run
            ? {
                run: true,
                items: test.items,
                statistic: test.statistic,
                degreesOfFreedom: k - 1,
                pValue: test.pValue,
                holmAdjustedPValue: adjusted?.[index] ?? null,
                resamples: REPORT_POSITION_RESAMPLES,
              }
            : { run: false, items: test.items },
        };
      }),
    },
    reference: referenceFigures(
      view,
      section,
      [...byItem].map(([messageId, itemRows]) => {
        const item = itemOf(view, messageId);
        return {
          item,
          reference: typeof item.reference === 'string' ? item.reference : null,
          outcome: outcomeOf(itemRows).subject,
        };
      }),
    ),
  };
  if (mode === 'debate') {
    const debate = report.debate!;
    const judged = [...byItem.values()];
    const revisions = groupBy(
      judged.flat().filter((x) => x.kind === 'revision'),
      (x) => x.model!,
    );
    const decisionOf = (v: string | null) =>
      v === 'REVISE' || v === 'STAND' || v === 'MERGE' ? v.toLowerCase() : 'unparsed';
    expected.revisions = [...revisions.keys()].sort(byName).map((model) => {
      const m = { model };
      const own = revisions.get(model) ?? [];
      const perItem = [...groupBy(own, (x) => x.messageId).values()];
      const share = (decision: string) =>
        pooledRate(
          perItem.map((rs) => ({
            successes: rs.filter((x) => decisionOf(x.verdict) === decision).length,
            trials: rs.length,
          })),
          seeded(options, `:share:${decision}:${m.model}`),
        );
      return {
        model,
        revisions: own.length,
        revise: share('revise'),
        stand: share('stand'),
        merge: share('merge'),
        unparsed: share('unparsed'),
      };
    });
    const winners = judged.map(outcomeOf).filter((o) => o.subject !== null);
    expected.winnerDecision = distributionOf(
      debate.winnerDecision,
      winners.map((o) => (['REVISE', 'STAND', 'MERGE'].includes(o.verdict ?? '') ? o.verdict! : 'unparsed')),
    );
    expected.winnerWasRevised = rate(
      winners.filter((o) => o.verdict === 'REVISE' || o.verdict === 'MERGE').length,
      winners.length,
    );
  }
  return expected;
}

// --- jury ----------------------------------------------------------------------------------------

export function juryFigures(report: BatchReport, view: ExportView): Expected {
  const jury = report.jury!;
  const { byItem, options } = view;
  const items = [...byItem.values()];
  const dimensionNames = jury.dimensions.map((d) => d.dimension);
  for (const s of items.flat().filter((x) => x.kind === 'score'))
    if (!dimensionNames.includes(s.subject!))
      throw new Error(`dimension ${s.subject} missing from the report`);

  const leniency = new LeniencyAccumulator();
  const overall = new LeniencyAccumulator();
  const fleiss = new FleissKappaAccumulator([...VERDICTS]);
  const fleissItems = new FleissKappaItems([...VERDICTS]);
  const alpha = new Map(dimensionNames.map((d) => [d, new KrippendorffAlphaAccumulator()]));
  const alphaUnits = new Map(dimensionNames.map((d) => [d, new IntervalAlphaUnits()]));
  const scoreStats = new Map(dimensionNames.map((d) => [d, new RunningStats()]));
  const scoreValues = new Map(dimensionNames.map((d) => [d, [] as string[]]));
  const itemMeans = new Map(dimensionNames.map((d) => [d, [] as number[]]));
  const assessments = { n: 0, allScoresRead: 0, someScoresRead: 0, verdictRead: 0 };
  const jurors = new Map<
    string,
    { verdicts: string[]; n: number; unparsed: number; scoresUnread: number; verdictUnread: number }
  >();
  const disagreement: {
    index: number;
    score: number;
    verdictSplit: number;
    scoreSpread: number;
    verdicts: Record<string, number>;
  }[] = [];

  for (const itemRows of items) {
    const verdictRows = itemRows.filter((x) => x.kind === 'verdict');
    const scores = itemRows.filter((x) => x.kind === 'score');
    const ratings: DimensionRating[] = scores.map((s) => ({
      rater: s.model!,
      dimension: s.subject!,
      score: s.value as number,
    }));
    const overallRatings: DimensionRating[] = [];
    const tally: Record<string, number> = { APPROVE: 0, REVISE: 0, REJECT: 0 };
    for (const v of verdictRows) {
      // A juror's scores are the score rows of its seat (model and participant).
      const own = scores.filter((s) => s.model === v.model && s.participant === v.participant);
      const j = jurors.get(v.model!) ?? {
        verdicts: [],
        n: 0,
        unparsed: 0,
        scoresUnread: 0,
        verdictUnread: 0,
      };
      jurors.set(v.model!, j);
      j.n++;
      if (!v.parsed) j.unparsed++;
      const all = DIMENSIONS.every((d) => own.some((s) => s.subject === d));
      if (!all) j.scoresUnread++;
      if (v.verdict === null) j.verdictUnread++;
      assessments.n++;
      if (all) assessments.allScoresRead++;
      if (own.length > 0) assessments.someScoresRead++;
      if (v.verdict !== null) {
        assessments.verdictRead++;
        j.verdicts.push(v.verdict);
        if (v.verdict in tally) tally[v.verdict]++;
      }
      if (own.length > 0)
        overallRatings.push({
          rater: v.model!,
          dimension: 'overall',
          score: mean(own.map((s) => s.value as number))!,
        });
    }
    leniency.addItem(ratings);
    overall.addItem(overallRatings);
    fleiss.addRatings(verdictRows.map((v) => v.verdict));
    fleissItems.addRatings(verdictRows.map((v) => v.verdict));
    let spreadSum = 0;
    let spreadDimensions = 0;
    for (const d of dimensionNames) {
      const values = scores.filter((s) => s.subject === d).map((s) => s.value as number);
      for (const v of values) {
        scoreStats.get(d)!.add(v);
        scoreValues.get(d)!.push(String(v));
      }
      alpha.get(d)!.addUnit(values);
      alphaUnits.get(d)!.addUnit(values);
      if (values.length > 0) itemMeans.get(d)!.push(mean(values)!);
      if (values.length >= 2) {
        spreadSum += Math.max(...values) - Math.min(...values);
        spreadDimensions++;
      }
    }
    const withVerdict = tally.APPROVE + tally.REVISE + tally.REJECT;
    const verdictSplit =
      withVerdict === 0 ? 0 : 1 - Math.max(tally.APPROVE, tally.REVISE, tally.REJECT) / withVerdict;
    const scoreSpread = spreadDimensions === 0 ? 0 : spreadSum / spreadDimensions;
    if (verdictSplit > 0 || scoreSpread > 0)
      disagreement.push({
        index: itemRows[0].index,
        score: verdictSplit * 100 + scoreSpread,
        verdictSplit,
        scoreSpread,
        verdicts: tally,
      });
  }

  const fleissResult = fleiss.result();
  const defined = dimensionNames.filter((d) => alpha.get(d)!.result('interval').value !== null);
  const [fleissInterval, ...alphaIntervals] = bootstrapStatistics(
    items.length,
    [
      (indices: Uint32Array) => (fleissResult.value === null ? null : fleissItems.kappa(indices)),
      ...defined.map((d) => (indices: Uint32Array) => alphaUnits.get(d)!.alpha(indices)),
    ],
    seeded(options, ':agreement'),
  );
  const alphaInterval = new Map(defined.map((d, i) => [d, alphaIntervals[i]]));
  const byDimension = new Map(leniency.result().map((d) => [d.dimension, d]));
  const overallRaters = overall.result().find((d) => d.dimension === 'overall');
  const top = [...disagreement].sort((a, b) => b.score - a.score).slice(0, 10);
  if (jury.mostDisagreement.length !== top.length) throw new Error('most disagreement: wrong count');
  const finals = items.map(outcomeOf).map((o) => o.verdict);
  const normalise = (v: string | number | null) =>
    typeof v === 'string' && v.trim() !== '' ? v.trim().toUpperCase() : null;

  return {
    items: items.length,
    assessments,
    verdicts: distributionOf(
      jury.verdicts,
      finals.filter((v): v is string => v !== null),
    ),
    jurorVerdicts: distributionOf(
      jury.jurorVerdicts,
      [...jurors.values()].flatMap((j) => j.verdicts),
    ),
    dimensions: jury.dimensions.map((d) => {
      const stats = scoreStats.get(d.dimension)!.result();
      const a = alpha.get(d.dimension)!.result('interval');
      return {
        scores: {
          n: stats.count,
          mean: stats.mean,
          standardDeviation: stats.standardDeviation,
          min: stats.min,
          max: stats.max,
        },
        itemMean: bootstrapFigure(bootstrapMean(itemMeans.get(d.dimension)!, options)),
        distribution: distributionOf(d.distribution, scoreValues.get(d.dimension)!),
        alpha: {
          value: a.value,
          n: a.pairableUnits,
          pairableValues: a.pairableValues,
          reading: interpretAlpha(a.value),
          interval: reportInterval(alphaInterval.get(d.dimension) ?? null),
        },
      };
    }),
    // In the recomputed order (leniency, most lenient first, then name).
    jurors: [...jurors.keys()]
      .sort((a, b) => {
        const of = (name: string) =>
          overallRaters?.raters.find((r) => r.rater === name)?.leniency ?? -Infinity;
        return of(b) - of(a) || byName(a, b);
      })
      .map((name) => {
        const juror = jury.jurors.find((x) => x.juror === name) ?? {
          juror: name,
          dimensions: [],
          verdicts: jury.jurorVerdicts,
        };
        const j = jurors.get(name)!;
        const own = overallRaters?.raters.find((r) => r.rater === name);
        return {
          juror: name,
          items: own?.items ?? 0,
          leniency: standardErrorFigure(own?.leniency ?? null, own?.standardError ?? null, own?.items ?? 0),
          dimensions: juror.dimensions.map((d) => {
            const r = byDimension.get(d.dimension)!.raters.find((x) => x.rater === juror.juror)!;
            return {
              leniency: standardErrorFigure(r.leniency, r.standardError, r.items),
              raterMean: r.raterMean,
              panelMean: r.panelMean,
            };
          }),
          verdicts: distributionOf(juror.verdicts, j.verdicts),
          parseFailures: rate(j.unparsed, j.n),
          scoresUnread: rate(j.scoresUnread, j.n),
          verdictUnread: rate(j.verdictUnread, j.n),
        };
      }),
    fleissKappa: {
      value: fleissResult.value,
      n: fleissResult.ratedItems,
      ratersPerItem: fleissResult.ratersPerItem ? { ...fleissResult.ratersPerItem } : null,
      observedAgreement: fleissResult.observedAgreement,
      expectedAgreement: fleissResult.expectedAgreement,
      interval: fleissResult.value === null ? null : reportInterval(fleissInterval),
    },
    // Ties in the disagreement order may come in either order: match each listed item by index.
    mostDisagreement: jury.mostDisagreement.map((shown) => {
      const own = disagreement.find((x) => x.index === shown.index)!;
      if (own.score < top[top.length - 1].score) throw new Error(`item ${shown.index} is not among the top`);
      return {
        index: own.index,
        verdictSplit: own.verdictSplit,
        scoreSpread: own.scoreSpread,
        verdicts: own.verdicts,
      };
    }),
    reference: referenceFigures(
      view,
      jury,
      [...byItem].map(([messageId, itemRows]) => {
        const item = itemOf(view, messageId);
        return { item, reference: normalise(item.reference), outcome: outcomeOf(itemRows).verdict };
      }),
      [...VERDICTS],
    ),
  };
}

// --- Delphi --------------------------------------------------------------------------------------

const CV_BUCKETS = ['< 0.05', '0.05–0.10', '0.10–0.20', '0.20–0.50', '≥ 0.50'];
const cvBucket = (cv: number) => CV_BUCKETS[cv < 0.05 ? 0 : cv < 0.1 ? 1 : cv < 0.2 ? 2 : cv < 0.5 ? 3 : 4];
const agreementBucket = (share: number) =>
  share < 0.5 ? '< 50 %' : share < 0.75 ? '50–74 %' : share < 1 ? '75–99 %' : '100 %';

function quantilesOf(values: readonly number[]) {
  return { n: values.length, p50: percentileCont(values, 0.5), p95: percentileCont(values, 0.95) };
}

export function delphiFigures(report: BatchReport, view: ExportView): Expected {
  const delphi = report.delphi!;
  const { byItem, options } = view;
  const items = [...byItem];
  const outcomes = items.map(([, rs]) => outcomeOf(rs));
  const converged = outcomes.filter((o) => o.converged);
  const convergenceRounds = converged.map((o) => o.round).filter((x): x is number => x !== null);
  const lastRounds = items.map(([, rs]) => rs.filter((x) => x.kind === 'round').at(-1));
  const numeric = items.filter(([, rs]) => outcomeOf(rs).method === 'numeric');
  const qualitative = items.filter(([, rs]) => outcomeOf(rs).method === 'qualitative');
  const lastOf = (rs: LongRow[]) => rs.filter((x) => x.kind === 'round').at(-1);
  const cvs = numeric.map(([, rs]) => lastOf(rs)?.cv ?? null).filter((x): x is number => x !== null);
  const agreements = qualitative
    .map(([, rs]) => lastOf(rs)?.agreement ?? null)
    .filter((x): x is number => x !== null);

  // Movement: round r's fresh numeric answers against round r − 1's median, clustered by item.
  const movementRounds = new Map<
    number,
    { perItem: { n: number; toward: number; away: number }[]; closed: number[]; n: number }
  >();
  for (const [, rs] of numeric) {
    const rounds = rs.filter((x) => x.kind === 'round');
    for (let i = 1; i < rounds.length; i++) {
      const median = rounds[i - 1].value;
      if (typeof median !== 'number') continue;
      const round = rounds[i].round!;
      const state = movementRounds.get(round) ?? { perItem: [], closed: [], n: 0 };
      movementRounds.set(round, state);
      const own = { n: 0, toward: 0, away: 0 };
      for (const e of rs.filter((x) => x.kind === 'estimate' && x.round === round)) {
        if (e.carriedForward || typeof e.value !== 'number' || typeof e.previous !== 'number') continue;
        const before = Math.abs(e.previous - median);
        const after = Math.abs(e.value - median);
        own.n++;
        state.n++;
        if (after < before) own.toward++;
        else if (after > before) own.away++;
        if (before > 0) state.closed.push((before - after) / before);
      }
      if (own.n > 0) state.perItem.push(own);
    }
  }

  // The numeric reference: errors of the final value, coverage of the prediction interval and range.
  const withNumber = (r: string | number | null) => {
    if (typeof r === 'number') return Number.isFinite(r) ? r : null;
    if (typeof r !== 'string' || r.trim() === '') return null;
    const n = Number(r.trim());
    return Number.isFinite(n) ? n : null;
  };
  const absolute: number[] = [];
  const signed: number[] = [];
  const percentage: number[] = [];
  let exact = 0;
  let withPrediction = 0;
  let insidePrediction = 0;
  let withRange = 0;
  let insideRange = 0;
  const numericMismatches: LongRow[] = [];
  const numericCounts = new Counts();
  for (const [messageId, rs] of numeric) {
    const item = itemOf(view, messageId);
    const reference = withNumber(item.reference);
    if (reference === null) {
      if (carries(item.reference)) {
        numericCounts.withReference++;
        numericCounts.exclude(item, 'unusableReference');
      } else numericCounts.without++;
      continue;
    }
    numericCounts.withReference++;
    const finalValue = outcomeOf(rs).value;
    if (typeof finalValue !== 'number') {
      numericCounts.exclude(item, 'noOutcome');
      continue;
    }
    const last = lastOf(rs)!;
    const estimates = rs
      .filter((x) => x.kind === 'estimate' && x.round === last.round && typeof x.value === 'number')
      .map((x) => x.value as number);
    const error = finalValue - reference;
    absolute.push(Math.abs(error));
    signed.push(error);
    if (reference !== 0) percentage.push((100 * Math.abs(error)) / Math.abs(reference));
    if (error === 0) exact++;
    if (estimates.length > 0) {
      withRange++;
      if (reference >= Math.min(...estimates) && reference <= Math.max(...estimates)) insideRange++;
    }
    const interval = predictionInterval(estimates);
    if (interval !== null) {
      withPrediction++;
      if (reference >= interval.low && reference <= interval.high) insidePrediction++;
      else numericMismatches.push(item);
    }
  }
  const answers = categoricalPart(
    qualitative.map(([messageId, rs]) => {
      const item = itemOf(view, messageId);
      const value = outcomeOf(rs).value;
      return {
        item,
        reference: carries(item.reference) ? String(item.reference).trim() : null,
        outcome: typeof value === 'string' ? value : null,
      };
    }),
    [],
    'the final answer (the most common one)',
  );
  const incomplete = Counts.incomplete(view);
  let reference: Expected | null = null;
  if (incomplete.withReference + numericCounts.withReference + answers.counts.withReference > 0) {
    const counts = Counts.merge([incomplete, numericCounts, answers.counts]);
    const numericFigures = {
      matching: rate(exact, absolute.length),
      cohen: null,
      numeric: {
        meanAbsoluteError: bootstrapFigure(bootstrapMean(absolute, options)),
        medianAbsoluteError: quantilesOf(absolute),
        meanSignedError: bootstrapFigure(bootstrapMean(signed, options)),
        meanAbsolutePercentageError: bootstrapFigure(bootstrapMean(percentage, options)),
        predictionIntervalCoverage: rate(insidePrediction, withPrediction),
        finalRangeCoverage: rate(insideRange, withRange),
      },
      mismatches: numericMismatches.slice(0, 20).map(link),
    };
    const hasNumeric = numericCounts.withReference > 0;
    const hasAnswers = answers.counts.withReference > 0;
    const figures =
      hasNumeric && hasAnswers
        ? {
            ...numericFigures,
            cohen: answers.figures.cohen,
            mismatches: [...numericFigures.mismatches, ...answers.figures.mismatches],
          }
        : hasNumeric
          ? numericFigures
          : hasAnswers
            ? answers.figures
            : { matching: rate(0, 0), cohen: null, numeric: null, mismatches: [] };
    reference = { ...counts, ...figures };
  }
  return {
    items: items.length,
    numericItems: numeric.length,
    qualitativeItems: qualitative.length,
    converged: rate(converged.length, items.length),
    roundsToConvergence: {
      n: convergenceRounds.length,
      mean: mean(convergenceRounds),
      distribution: distributionOf(delphi.roundsToConvergence.distribution, convergenceRounds.map(String)),
    },
    rounds: distributionOf(
      delphi.rounds,
      lastRounds.filter((x) => x !== undefined).map((x) => String(x!.round)),
    ),
    finalCv: {
      ...quantilesOf(cvs),
      mean: mean(cvs),
      distribution: distributionOf(delphi.finalCv.distribution, cvs.map(cvBucket)),
    },
    finalAgreement: {
      ...quantilesOf(agreements),
      mean: mean(agreements),
      distribution: distributionOf(delphi.finalAgreement.distribution, agreements.map(agreementBucket)),
    },
    movement: [...movementRounds]
      .sort(([a], [b]) => a - b)
      .map(([round, s]) => ({
        round,
        n: s.n,
        movedTowardMedian: pooledRate(
          s.perItem.map((o) => ({ successes: o.toward, trials: o.n })),
          seeded(options, `:share:toward:${round}`),
        ),
        movedAway: pooledRate(
          s.perItem.map((o) => ({ successes: o.away, trials: o.n })),
          seeded(options, `:share:away:${round}`),
        ),
        distanceClosed: bootstrapFigure(bootstrapMean(s.closed, options)),
      })),
    reference,
  };
}

// --- the walk ------------------------------------------------------------------------------------

/**
 * Compares the recomputed figures with the report's, and returns what differs and which numeric
 * leaves of the report were not recomputed at all (both must be empty).
 */
export function compareFigures(
  report: BatchReport,
  expected: Expected,
): { mismatches: string[]; missing: string[]; covered: number } {
  const covered = new Set<string>();
  const mismatches: string[] = [];
  const match = (actual: unknown, want: unknown, path: string): void => {
    if (typeof want === 'number') {
      if (typeof actual !== 'number') {
        mismatches.push(`${path}: report ${JSON.stringify(actual)}, export ${want}`);
        return;
      }
      // Durations come from timestamps in milliseconds with microseconds: compared to 1 µs.
      const tolerance = /DurationMs/.test(path) ? 1e-3 : 1e-9 * Math.max(1, Math.abs(want));
      if (!(Math.abs(actual - want) <= tolerance))
        mismatches.push(`${path}: report ${actual}, export ${want}`);
      covered.add(path);
      return;
    }
    if (want === null || want === undefined || typeof want !== 'object') {
      if (actual !== want && !(want === undefined && actual === undefined))
        mismatches.push(`${path}: report ${JSON.stringify(actual)}, export ${JSON.stringify(want)}`);
      return;
    }
    if (Array.isArray(want)) {
      if (!Array.isArray(actual) || actual.length !== want.length) {
        mismatches.push(
          `${path}: report has ${JSON.stringify(actual)?.slice(0, 200)}, export ${want.length} entries`,
        );
        return;
      }
      want.forEach((w, i) => match(actual[i], w, `${path}.${i}`));
      return;
    }
    if (actual === null || typeof actual !== 'object') {
      mismatches.push(`${path}: report ${JSON.stringify(actual)}, export an object`);
      return;
    }
    for (const [key, w] of Object.entries(want)) {
      // A report figure's note is words, not a number: compared when both have one.
      match((actual as Record<string, unknown>)[key], w, `${path}.${key}`);
    }
  };
  match(report, expected, '$');
  const missing: string[] = [];
  const walk = (node: Json | undefined, path: string) => {
    if (typeof node === 'number') {
      if (!covered.has(path)) missing.push(`${path} = ${node}`);
      return;
    }
    if (node === null || typeof node !== 'object') return;
    if (Array.isArray(node)) node.forEach((v, i) => walk(v, `${path}.${i}`));
    else for (const [key, v] of Object.entries(node)) walk(v, `${path}.${key}`);
  };
  walk(report as unknown as Json, '$');
  return { mismatches, missing, covered: covered.size };
}

// --- panel gain (issue 37, item 3) ---------------------------------------------------------------

const GAIN_FIRST: Record<string, string> = {
  council: 'stage1',
  vote: 'initial_answer',
  debate: 'initial_answer',
  delphi: 'round_1',
};

const verdictOf = (grade: string | null | undefined): GainGrade =>
  grade === 'correct' || grade === 'incorrect' || grade === 'unreadable' ? grade : null;

/**
 * The panel-gain sections recomputed from the export's `answer` rows (their `grade` column), its
 * `contestant` rows (council's seats: the label's position on the first item where the most
 * members were labelled), its `round` rows (Delphi medians) against the `expected` column, and
 * its `call` and `item` rows (cost, tokens, duration of the latest attempt); then the library's
 * `panelGain` and `panelGainSentences` on those inputs, with the seed and resamples the report's
 * method section states (`<seed>:<mode>`).
 */
export function panelGainFigures(report: BatchReport, view: ExportView): Expected[] {
  const { items, byItem, rows } = view;
  const callsOf = groupBy(
    rows.filter((r) => r.kind === 'call'),
    (r) => r.messageId,
  );
  const sections: Expected[] = [];
  for (const mode of ['council', 'vote', 'debate', 'delphi'] as const) {
    const modeItems = items.filter(
      (i) =>
        i.mode === mode &&
        i.status === 'complete' &&
        (byItem.get(i.messageId) ?? []).some((r) => r.kind === 'answer' && verdictOf(r.grade) !== null),
    );
    if (modeItems.length === 0) continue;
    // Council: a model's seat is its label's position where every member was labelled.
    const councilSeat = new Map<string, number>();
    if (mode === 'council') {
      const labelled = modeItems.map((i) =>
        (byItem.get(i.messageId) ?? []).filter((r) => r.kind === 'contestant'),
      );
      const most = Math.max(0, ...labelled.map((l) => l.length));
      for (const r of labelled.find((l) => l.length === most) ?? [])
        councilSeat.set(r.model!, Number(r.value));
    }
    const built: PanelGainItem[] = modeItems.map((item) => {
      const judged = byItem.get(item.messageId) ?? [];
      const answers = judged.filter((r) => r.kind === 'answer');
      const seatOf = (r: LongRow, i: number) =>
        mode === 'council'
          ? (councilSeat.get(r.model ?? '') ??
            Number(judged.find((c) => c.kind === 'contestant' && c.model === r.model)?.value ?? i + 1))
          : (r.participant ?? i) + 1;
      const revised = new Map(
        answers.filter((r) => r.stage === 'revision').map((r, i) => [seatOf(r, i), verdictOf(r.grade)]),
      );
      const members = answers
        .filter((r) => r.stage === GAIN_FIRST[mode])
        .map((r, i) => ({
          seat: seatOf(r, i),
          model: r.model ?? '',
          grade: verdictOf(r.grade),
          ...(mode === 'debate' ? { revisedGrade: revised.get(seatOf(r, i)) ?? null } : {}),
        }));
      const finals = answers.filter((r) => r.subject === 'final');
      const calls = callsOf.get(item.messageId) ?? [];
      const costs = calls.map((c) => c.costUsd).filter((c): c is number => c !== null);
      let delphi: PanelGainItem['delphi'];
      if (mode === 'delphi') {
        const expected = numericExpected(item.expected);
        const medians = judged
          .filter((r) => r.kind === 'round')
          .sort((a, b) => (a.round ?? 0) - (b.round ?? 0))
          .map((r) => (typeof r.value === 'number' ? r.value : null));
        const error = (v: number | null | undefined) =>
          expected === null || v === null || v === undefined ? null : Math.abs(v - expected);
        const first = medians.length > 0 ? medians[0] : null;
        const last = medians.length > 0 ? medians[medians.length - 1] : null;
        delphi =
          expected === null || (first === null && last === null)
            ? null
            : { firstMedianError: error(first), finalError: error(last) };
      }
      return {
        index: item.index,
        key: item.key,
        members,
        panel: verdictOf(finals[finals.length - 1]?.grade),
        ...(mode === 'delphi' ? { delphi } : {}),
        costUsd: costs.length === 0 ? null : sum(costs),
        tokens:
          calls.length === 0
            ? null
            : sum(calls.map((c) => (c.promptTokens ?? 0) + (c.completionTokens ?? 0))),
        latencyMs: item.durationMs,
      };
    });
    // Every seat of the mode on every item (a member without an answer: no grade), by seat.
    const seats = new Map<number, string>();
    for (const it of built) for (const m of it.members) if (!seats.has(m.seat)) seats.set(m.seat, m.model);
    const full = built.map((it) => ({
      ...it,
      members: [...seats.keys()]
        .sort((a, b) => a - b)
        .map(
          (seat) =>
            it.members.find((m) => m.seat === seat) ?? {
              seat,
              model: seats.get(seat)!,
              grade: null,
              ...(mode === 'debate' ? { revisedGrade: null } : {}),
            },
        ),
    }));
    const section = panelGain(full, {
      seed: `${report.method.seed}:${mode}`,
      resamples: report.method.resamples,
      confidence: DEFAULT_CONFIDENCE,
    });
    sections.push({ mode, ...section, sentences: panelGainSentences(section) });
  }
  return sections;
}
