import {
  MODE_NAMES,
  type BatchReport,
  type BatchReportItems,
  type BatchStatus,
  type BatchUsageSummary,
  type ModeName,
  type ReportFailures,
  type ReportModelUsage,
  type PanelGainItem,
  type ReportPanelGain,
} from '@conclave/contracts';
import { modeFacts } from '@conclave/deliberation/facts';
import { DEFAULT_BOOTSTRAP_RESAMPLES, DEFAULT_CONFIDENCE, type BootstrapOptions } from '../bootstrap';
import { ContestReportBuilder } from './contest';
import { CouncilReportBuilder } from './council';
import { DelphiReportBuilder } from './delphi';
import { JuryReportBuilder } from './jury';
import { pooledRate, rate } from './figures';
import type { ClusterCount } from '../inference/cluster-proportion';
import { countIntervals, multipleComparisonNote, reportMethods } from './methods';
import { panelGain } from './panel-gain';
import { panelGainSentences } from './panel-gain-text';
import {
  councilSeats,
  PANEL_GAIN_MODES,
  panelGainItem,
  withAllSeats,
  type PanelGainMode,
} from './panel-gain-items';
import {
  itemLink,
  type ReportAggregates,
  type ReportItem,
  type ReportStageRow,
  type ReportUsageAggregate,
} from './rows';

/** How many failed or cancelled items a note names per mode. */
const EXCLUDED_NAMED = 20;

/**
 * The answers of one row a parser had to read, and whether it could: rankings (council), votes
 * (vote, debate), revision decisions (debate), juror assessments (jury), estimates (Delphi), as
 * each mode's facts say (ModeFacts.parsedAnswer).
 */
export function parsedAnswer(mode: ModeName, row: ReportStageRow): boolean | null {
  return modeFacts(mode)?.parsedAnswer(row) ?? null;
}

export interface BatchReportMeta {
  batchId: string;
  name: string | null;
  status: BatchStatus;
  generatedAt: string;
}

export interface BatchReportOptions {
  /** The bootstrap seed: the batch id, so the same rows always give the same intervals. */
  seed: string;
  resamples?: number;
}

export function usageSummary(usage: ReportUsageAggregate): BatchUsageSummary {
  return {
    items: usage.items,
    promptTokens: usage.promptTokens,
    completionTokens: usage.completionTokens,
    costUsd: usage.costUsd,
    costPerItemUsd: { n: usage.items, p50: usage.costP50, p95: usage.costP95, mean: usage.costMean },
    itemDurationMs: { n: usage.durationItems, p50: usage.durationP50, p95: usage.durationP95 },
    callLatencyMs: { n: usage.okCalls, p50: usage.latencyP50, p95: usage.latencyP95 },
  };
}

/** A model's answers a parser read on each item: parsed and failed counts per item (the clusters). */
export interface ModelParses {
  parsed: number;
  failed: number;
  /** One entry per item the model answered: its answers there, and how many could not be read. */
  perItem?: ClusterCount[];
}

/**
 * The failed-call share of one model: clustered by item (a model's calls on one item, retries
 * included, share the prompt and the provider's state) when the per-item counts are there,
 * Wilson's over calls otherwise.
 */
function failedCallRate(
  call: ReportAggregates['calls'][number] | undefined,
  options: BootstrapOptions,
): ReturnType<typeof rate> {
  if (call?.perItem === undefined) return rate(call?.failed ?? 0, call?.calls ?? 0);
  const clusters: ClusterCount[] = [];
  for (const row of call.perItem) {
    for (let i = 0; i < row.items; i++) clusters.push({ successes: row.failed, trials: row.calls });
  }
  return pooledRate(clusters, options);
}

/**
 * Per model usage from the call aggregates, with parse failures counted from the stage rows. With
 * bootstrap options, shares pooled over items with several trials per item are clustered by item
 * (seeds `<seed>:failed-calls:<model>` and `<seed>:parse-failures:<model>`).
 */
export function modelUsage(
  aggregates: ReportAggregates,
  parses: ReadonlyMap<string, ModelParses>,
  options: BootstrapOptions = {},
): ReportModelUsage[] {
  const models = new Set([...aggregates.calls.map((c) => c.model), ...parses.keys()]);
  const seed = String(options.seed ?? '');
  return [...models]
    .map((model): ReportModelUsage => {
      const c = aggregates.calls.find((x) => x.model === model);
      const p = parses.get(model) ?? { parsed: 0, failed: 0 };
      return {
        model,
        calls: c?.calls ?? 0,
        failedCalls: failedCallRate(c, { ...options, seed: `${seed}:failed-calls:${model}` }),
        parseFailures:
          p.perItem === undefined
            ? rate(p.failed, p.parsed + p.failed)
            : pooledRate(p.perItem, { ...options, seed: `${seed}:parse-failures:${model}` }),
        promptTokens: c?.promptTokens ?? 0,
        completionTokens: c?.completionTokens ?? 0,
        costUsd: c?.costUsd ?? 0,
        latencyMs: { n: c?.okCalls ?? 0, p50: c?.latencyP50 ?? null, p95: c?.latencyP95 ?? null },
      };
    })
    .sort((a, b) => b.costUsd - a.costUsd || (a.model < b.model ? -1 : a.model > b.model ? 1 : 0));
}

/**
 * A batch report built in one streaming pass: the caller feeds every item of the batch in
 * submission order with its stage rows (a page at a time), then asks for the result together with
 * what SQL aggregated. Only complete items feed the mode statistics; finished items' rows feed the
 * parse-failure rates; failed items are reported under failures.
 */
export class BatchReportBuilder {
  private readonly council = new CouncilReportBuilder();
  private readonly vote = new ContestReportBuilder('vote');
  private readonly debate = new ContestReportBuilder('debate');
  private readonly jury = new JuryReportBuilder();
  private readonly delphi = new DelphiReportBuilder();
  private readonly modes = new Set<ModeName>();
  private readonly completeByMode = new Map<ModeName, number>();
  private readonly finishedByMode = new Map<ModeName, number>();
  private readonly parses = new Map<string, Required<ModelParses>>();
  /** Failed or cancelled items per mode: their count and the first indices, named in the notes. */
  private readonly excludedByMode = new Map<ModeName, { count: number; shown: number[] }>();
  private readonly counts: BatchReportItems = {
    total: 0,
    complete: 0,
    failed: 0,
    cancelled: 0,
    unfinished: 0,
  };
  private readonly bootstrap: BootstrapOptions;
  /** Graded complete items of the panel modes, as panel-gain records (issue 37, item 3). */
  private readonly gain = new Map<PanelGainMode, PanelGainItem[]>();

  constructor(private readonly options: BatchReportOptions) {
    this.bootstrap = {
      seed: options.seed,
      resamples: options.resamples ?? DEFAULT_BOOTSTRAP_RESAMPLES,
      confidence: DEFAULT_CONFIDENCE,
    };
  }

  private builder(mode: ModeName) {
    switch (mode) {
      case 'council':
        return this.council;
      case 'vote':
        return this.vote;
      case 'debate':
        return this.debate;
      case 'jury':
        return this.jury;
      case 'delphi':
        return this.delphi;
    }
  }

  addItem(item: ReportItem, rows: readonly ReportStageRow[]): void {
    this.counts.total++;
    this.modes.add(item.mode);
    if (item.status === 'queued' || item.status === 'running') {
      this.counts.unfinished++;
      // Counted in its mode's reference counts (issue 36: counts over all items), never compared.
      this.builder(item.mode).addExcluded(item, 'unfinished');
      return;
    }
    if (item.status === 'cancelled') this.counts.cancelled++;
    if (item.status === 'failed') this.counts.failed++;
    if (item.status === 'failed' || item.status === 'cancelled') {
      this.builder(item.mode).addExcluded(item, item.status);
      const excluded = this.excludedByMode.get(item.mode) ?? { count: 0, shown: [] };
      excluded.count++;
      if (excluded.shown.length < EXCLUDED_NAMED) excluded.shown.push(item.index);
      this.excludedByMode.set(item.mode, excluded);
    }
    this.finishedByMode.set(item.mode, (this.finishedByMode.get(item.mode) ?? 0) + 1);
    const onItem = new Map<string, { successes: number; trials: number }>();
    for (const row of rows) {
      const parsed = parsedAnswer(item.mode, row);
      if (parsed === null || row.model === null) continue;
      let p = this.parses.get(row.model);
      if (p === undefined) {
        p = { parsed: 0, failed: 0, perItem: [] };
        this.parses.set(row.model, p);
      }
      let own = onItem.get(row.model);
      if (own === undefined) {
        own = { successes: 0, trials: 0 };
        onItem.set(row.model, own);
        p.perItem.push(own);
      }
      own.trials++;
      if (parsed) p.parsed++;
      else {
        p.failed++;
        own.successes++;
      }
    }
    if (item.status !== 'complete') return;
    this.counts.complete++;
    this.completeByMode.set(item.mode, (this.completeByMode.get(item.mode) ?? 0) + 1);
    this.builder(item.mode).addItem(item, rows);
    const graded = panelGainItem(item, rows);
    if (graded !== null) {
      const mode = item.mode as PanelGainMode;
      const list = this.gain.get(mode) ?? [];
      list.push(graded);
      this.gain.set(mode, list);
    }
  }

  private seated(mode: PanelGainMode): PanelGainItem[] {
    const items = this.gain.get(mode) ?? [];
    return mode === 'council' ? councilSeats(items) : items;
  }

  /** The panel-gain sections of the graded modes (seeds `<seed>:<mode>`), or undefined without grades. */
  private panelGain(): ReportPanelGain[] | undefined {
    if (this.gain.size === 0) return undefined;
    return PANEL_GAIN_MODES.filter((mode) => this.gain.has(mode)).map((mode) => {
      const section = panelGain(withAllSeats(this.seated(mode)), {
        seed: `${this.options.seed}:${mode}`,
        resamples: this.bootstrap.resamples,
        confidence: DEFAULT_CONFIDENCE,
      });
      return { mode, ...section, sentences: panelGainSentences(section) };
    });
  }

  result(meta: BatchReportMeta, aggregates: ReportAggregates): BatchReport {
    // A mode's section is there once one of its items finished (a council whose chairman failed on
    // every item still shows those failures).
    const has = (mode: ModeName) => (this.finishedByMode.get(mode) ?? 0) > 0;
    const finished = this.counts.complete + this.counts.failed + this.counts.cancelled;
    const shown = aggregates.failures.slice(0, 20);
    const failures: ReportFailures = {
      failedItems: rate(this.counts.failed, finished),
      cancelledItems: this.counts.cancelled,
      groups: shown.map((g) => ({
        error: g.error.length > 500 ? `${g.error.slice(0, 500)}…` : g.error,
        count: g.count,
        examples: g.examples.slice(0, 5).map(itemLink),
      })),
      otherFailedItems: Math.max(0, this.counts.failed - shown.reduce((sum, g) => sum + g.count, 0)),
    };
    const notes: string[] = [];
    const partial = this.counts.unfinished > 0 || meta.status === 'queued' || meta.status === 'running';
    if (partial) {
      notes.push(
        `Partial report: ${this.counts.unfinished} of ${this.counts.total} items are still queued or running and are not in the statistics (a section's reference counts include them).`,
      );
    }
    notes.push(
      'Mode statistics are over complete items only; failed items are counted under failures, and their ' +
        'calls under per-model usage.',
    );
    const modes = MODE_NAMES.filter((m) => this.modes.has(m));
    for (const mode of modes) {
      if ((this.completeByMode.get(mode) ?? 0) === 0)
        notes.push(`No ${mode} item is complete yet, so there are no ${mode} statistics.`);
      const excluded = this.excludedByMode.get(mode);
      if (excluded) {
        const more = excluded.count > excluded.shown.length ? `, … (${excluded.count} in all)` : '';
        const one = excluded.count === 1;
        notes.push(
          `${excluded.count} ${mode} ${one ? 'item' : 'items'} failed or ${one ? 'was' : 'were'} cancelled and ` +
            `${one ? 'is' : 'are'} not in the ${mode} statistics: ${one ? 'item' : 'items'} ${excluded.shown.join(', ')}${more}.`,
        );
      }
    }
    const gain = this.panelGain();
    const report: BatchReport = {
      batchId: meta.batchId,
      name: meta.name,
      status: meta.status,
      partial,
      generatedAt: meta.generatedAt,
      modes,
      items: { ...this.counts },
      method: {
        confidence: DEFAULT_CONFIDENCE,
        resamples: this.bootstrap.resamples ?? DEFAULT_BOOTSTRAP_RESAMPLES,
        seed: this.options.seed,
        methods: [],
      },
      council: has('council') ? this.council.result(this.bootstrap, aggregates.stageCalls) : null,
      vote: has('vote') ? this.vote.result(this.bootstrap) : null,
      debate: has('debate') ? this.debate.debateResult(this.bootstrap) : null,
      jury: has('jury') ? this.jury.result(this.bootstrap) : null,
      delphi: has('delphi') ? this.delphi.result(this.bootstrap) : null,
      ...(gain === undefined ? {} : { panelGain: gain }),
      models: modelUsage(aggregates, this.parses, this.bootstrap),
      usage: usageSummary(aggregates.usage),
      failures,
      notes,
    };
    report.method.methods = reportMethods(report, report.method);
    const many = multipleComparisonNote(countIntervals(report));
    if (many !== null) report.notes.push(many);
    return report;
  }
}
