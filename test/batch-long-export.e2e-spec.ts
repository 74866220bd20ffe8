import type { LongRow } from '@conclave/analysis';
import type { BatchAccepted, BatchReport, BatchView, ReportRate } from '@conclave/contracts';
import { parse } from 'csv-parse/sync';
import { TestStack } from './support/harness';
import {
  commonFigures,
  compareFigures,
  contestFigures,
  councilFigures,
  delphiFigures,
  juryFigures,
  panelGainFigures,
  viewOf,
  type ExportView,
} from './support/report-recompute';
import { sleep } from './support/wait';

/**
 * The long-format export reproduces the report (issue 36): for a batch of each mode, every figure
 * checked below is recomputed from `GET /api/batches/:id/results?shape=long` alone, with plain
 * arithmetic written here (not the report's code), and must equal the report's figure.
 */

const TERMINAL = ['complete', 'failed', 'cancelled'];
/** The vote batch's references: the first 14 items carry one, mostly the model that wins. */
const voteReference = (i: number) => (i >= 14 ? null : i % 3 === 0 ? 'sim/b:voteB' : 'sim/a:voteA');
const CONTENT = (i: number) =>
  `Candidate answer ${i}: water boils at ${95 + i} degrees Celsius at sea level.`;

// --- plain arithmetic -------------------------------------------------------------------------

const sum = (values: number[]) => values.reduce((a, b) => a + b, 0);
const mean = (values: number[]) => (values.length === 0 ? null : sum(values) / values.length);

/** PostgreSQL's percentile_cont: linear interpolation between the closest ranks. */
function percentileCont(values: number[], p: number): number | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  const position = p * (sorted.length - 1);
  const low = Math.floor(position);
  const high = Math.ceil(position);
  return sorted[low] + (sorted[high] - sorted[low]) * (position - low);
}

function countBy<T>(values: T[]): Map<T, number> {
  const counts = new Map<T, number>();
  for (const v of values) counts.set(v, (counts.get(v) ?? 0) + 1);
  return counts;
}

function groupBy<T, K>(values: T[], key: (v: T) => K): Map<K, T[]> {
  const groups = new Map<K, T[]>();
  for (const v of values) {
    const k = key(v);
    const list = groups.get(k);
    if (list) list.push(v);
    else groups.set(k, [v]);
  }
  return groups;
}

const close = (a: number | null, b: number | null, digits = 9) => {
  if (a === null || b === null) expect(a).toBe(b);
  else expect(a).toBeCloseTo(b, digits);
};

const expectRate = (got: ReportRate, count: number, n: number) => {
  expect({ count: got.count, n: got.n }).toEqual({ count, n });
};

// --- what every mode's report shares ------------------------------------------------------------

/** The latest attempt of each item, and the rows of the latest attempts that are complete. */
function split(rows: LongRow[]) {
  const items = rows.filter((r) => r.kind === 'item' && r.latest);
  const complete = new Set(items.filter((i) => i.status === 'complete').map((i) => i.messageId));
  const judged = rows.filter((r) => r.kind !== 'item' && r.kind !== 'call' && complete.has(r.messageId));
  return { items, complete, judged, byItem: groupBy(judged, (r) => r.messageId) };
}

/** Items, usage, per-model usage and failures: the figures every report has. */
function checkCommon(report: BatchReport, rows: LongRow[]): void {
  const { items } = split(rows);
  const status = countBy(items.map((i) => i.status));
  expect(report.items).toEqual({
    total: items.length,
    complete: status.get('complete') ?? 0,
    failed: status.get('failed') ?? 0,
    cancelled: status.get('cancelled') ?? 0,
    unfinished: (status.get('queued') ?? 0) + (status.get('running') ?? 0),
  });

  // Usage: every call of every finished attempt; per item over the latest attempts that ran.
  const calls = rows.filter((r) => r.kind === 'call' && TERMINAL.includes(r.status));
  const ran = items.filter((i) => i.status === 'complete' || i.status === 'failed');
  const costOf = (messageId: string) =>
    sum(calls.filter((c) => c.messageId === messageId).map((c) => c.costUsd ?? 0));
  const itemCosts = ran.map((i) => costOf(i.messageId));
  const durations = ran.map((i) => i.durationMs).filter((d): d is number => d !== null);
  const latencies = calls.filter((c) => c.ok).map((c) => c.latencyMs as number);
  const usage = report.usage;
  expect(usage.items).toBe(ran.length);
  expect(usage.promptTokens).toBe(sum(calls.map((c) => c.promptTokens ?? 0)));
  expect(usage.completionTokens).toBe(sum(calls.map((c) => c.completionTokens ?? 0)));
  close(usage.costUsd, sum(calls.map((c) => c.costUsd ?? 0)));
  close(usage.costPerItemUsd.mean, mean(itemCosts));
  close(usage.costPerItemUsd.p50, percentileCont(itemCosts, 0.5));
  close(usage.costPerItemUsd.p95, percentileCont(itemCosts, 0.95));
  expect(usage.itemDurationMs.n).toBe(durations.length);
  close(usage.itemDurationMs.p50, percentileCont(durations, 0.5), 3);
  close(usage.itemDurationMs.p95, percentileCont(durations, 0.95), 3);
  expect(usage.callLatencyMs.n).toBe(latencies.length);
  close(usage.callLatencyMs.p50, percentileCont(latencies, 0.5));
  close(usage.callLatencyMs.p95, percentileCont(latencies, 0.95));

  // Per model: calls, failed calls, tokens, cost, latency; parse failures from the judgement rows
  // of finished items (the answers a parser had to read).
  const finished = new Set(items.filter((i) => TERMINAL.includes(i.status)).map((i) => i.messageId));
  const parses = rows.filter(
    (r) =>
      ['ranking', 'vote', 'revision', 'verdict', 'estimate'].includes(r.kind) &&
      r.parsed !== null &&
      finished.has(r.messageId),
  );
  const models = new Set([...calls.map((c) => c.model!), ...parses.map((p) => p.model!.split('#')[0])]);
  expect(report.models.map((m) => m.model).sort()).toEqual([...models].sort());
  for (const m of report.models) {
    const mine = calls.filter((c) => c.model === m.model);
    const ok = mine.filter((c) => c.ok).map((c) => c.latencyMs as number);
    expect(m.calls).toBe(mine.length);
    expectRate(m.failedCalls, mine.filter((c) => !c.ok).length, mine.length);
    expect(m.promptTokens).toBe(sum(mine.map((c) => c.promptTokens ?? 0)));
    expect(m.completionTokens).toBe(sum(mine.map((c) => c.completionTokens ?? 0)));
    close(m.costUsd, sum(mine.map((c) => c.costUsd ?? 0)));
    expect(m.latencyMs.n).toBe(ok.length);
    close(m.latencyMs.p50, percentileCont(ok, 0.5));
    close(m.latencyMs.p95, percentileCont(ok, 0.95));
    const own = parses.filter((p) => p.model!.split('#')[0] === m.model);
    expectRate(m.parseFailures, own.filter((p) => p.parsed === false).length, own.length);
  }

  // Failures: failed items over finished ones, grouped by their error.
  const failed = items.filter((i) => i.status === 'failed');
  expectRate(
    report.failures.failedItems,
    failed.length,
    items.filter((i) => TERMINAL.includes(i.status)).length,
  );
  expect(report.failures.cancelledItems).toBe(status.get('cancelled') ?? 0);
  const groups = countBy(failed.map((i) => i.error || '(no error recorded)'));
  expect(Object.fromEntries(report.failures.groups.map((g) => [g.error, g.count]))).toEqual(
    Object.fromEntries(groups),
  );
  for (const group of report.failures.groups) {
    const indexes = failed
      .filter((i) => (i.error || '(no error recorded)') === group.error)
      .map((i) => i.index);
    expect(group.examples.map((e) => e.index)).toEqual(indexes.slice(0, 5));
  }
}

/** Reference agreement of a categorical outcome: items with a reference, and matches. */
function checkReference(
  report: { itemsWithReference: number; itemsWithoutReference: number; matching: ReportRate } | null,
  allItems: LongRow[],
  outcomes: { reference: string | number | null; outcome: string | null }[],
  normalise: (v: string) => string = (v) => v,
): void {
  const carries = (o: { reference: string | number | null }) =>
    o.reference !== null && String(o.reference).trim() !== '';
  const withReference = outcomes.filter(carries);
  expect(report).not.toBeNull();
  // Counted over every item of the batch (issue 36), failed ones too; matched over complete ones.
  expect(report!.itemsWithReference).toBe(allItems.filter(carries).length);
  expect(report!.itemsWithoutReference).toBe(allItems.length - allItems.filter(carries).length);
  const matching = withReference.filter(
    (o) => o.outcome !== null && normalise(String(o.reference).trim()) === normalise(o.outcome),
  ).length;
  expectRate(report!.matching, matching, withReference.length);
}

// --- the tests --------------------------------------------------------------------------------

describe('long-format export: every figure of the report recomputed from it', () => {
  const stack = new TestStack({ WORKER_CONCURRENCY: '32' });
  beforeAll(() => stack.start(), 60_000);
  afterAll(() => stack.stop());

  async function submit(body: unknown): Promise<string> {
    const accepted = await stack.api<BatchAccepted & { message?: string }>('POST', '/api/batches', { body });
    if (accepted.status !== 202) throw new Error(`batch refused: ${JSON.stringify(accepted.body)}`);
    return accepted.body.batchId;
  }

  async function finished(batchId: string, timeoutMs = 180_000): Promise<BatchView> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const view = (await stack.api<BatchView>('GET', `/api/batches/${batchId}`)).body;
      if (view.status !== 'queued' && view.status !== 'running') return view;
      if (Date.now() > deadline) throw new Error(`batch ${batchId} not finished: ${JSON.stringify(view)}`);
      await sleep(200);
    }
  }

  const report = async (batchId: string) => {
    const got = await stack.api<BatchReport>('GET', `/api/batches/${batchId}/report`);
    expect(got.status).toBe(200);
    return got.body;
  };

  /** The long export as JSONL, checked against its CSV twin: same rows, same cells. */
  async function exported(batchId: string): Promise<LongRow[]> {
    const jsonl = await stack.api<string>('GET', `/api/batches/${batchId}/results?shape=long`);
    expect(jsonl.status).toBe(200);
    const rows = jsonl.body
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as LongRow);
    const csv = await stack.api<string>('GET', `/api/batches/${batchId}/results?format=csv&shape=long`);
    expect(csv.status).toBe(200);
    const sheet = parse(csv.body, { columns: true }) as Record<string, string>[];
    expect(sheet).toHaveLength(rows.length);
    sheet.forEach((cells, i) => {
      for (const [column, value] of Object.entries(rows[i])) {
        const text = value === null ? '' : String(value);
        expect([i, column, cells[column]]).toEqual([
          i,
          column,
          /^[=+\-@]/.test(text) && typeof value === 'string' ? `'${text}` : text,
        ]);
      }
    });
    return rows;
  }

  const batches: Record<string, string> = {};

  beforeAll(async () => {
    const range = (n: number) => Array.from({ length: n }, (_, i) => i);
    const [council, vote, debate, jury, delphi] = await Promise.all([
      submit({
        name: 'council',
        defaults: {
          mode: 'council',
          councilModels: ['sim/athena', 'sim/hermes', 'sim/apollo'],
          chairmanModel: 'sim/chair',
        },
        items: range(12).map((i) => ({
          question: `Council question ${i}: is tea better than coffee?`,
          key: `c${i}`,
          ...(i === 2 ? {} : { reference: i % 2 ? 'sim/hermes' : 'sim/athena' }),
          ...(i === 3 ? { chairmanModel: 'sim/broken:fail@synthesis' } : {}),
        })),
      }),
      // Two groups of items by answers shown (3 and 4), ten each: two position tests, Holm-adjusted.
      submit({
        name: 'vote',
        defaults: {
          mode: 'vote',
          modeConfig: { models: ['sim/a:voteA', 'sim/b:voteB', 'sim/c:novote'], chairmanModel: 'sim/chair' },
        },
        items: range(20).map((i) => ({
          question: `Which is best, option ${i}?`,
          key: `v${i}`,
          ...(i < 14 ? { reference: voteReference(i) } : {}),
          ...(i >= 10
            ? {
                modeConfig: {
                  models: ['sim/a:voteA', 'sim/b:voteB', 'sim/c:novote', 'sim/d'],
                  chairmanModel: 'sim/chair',
                },
              }
            : {}),
        })),
      }),
      submit({
        name: 'debate',
        defaults: { mode: 'debate', modeConfig: { models: ['sim/a:revise', 'sim/b:stand', 'sim/c:merge'] } },
        items: range(12).map((i) => ({
          question: `Debate ${i}`,
          key: `d${i}`,
          reference: i % 3 === 0 ? 'sim/a:revise' : 'sim/b:stand',
        })),
      }),
      submit({
        name: 'jury',
        defaults: {
          mode: 'jury',
          modeConfig: {
            jurorModels: ['sim/kind:good', 'sim/j2:fair', 'sim/j3:fair'],
            foremanModel: 'sim/foreman',
          },
        },
        // The last three items have a juror whose verdict cannot be read (its scores can); items 5
        // and 6 a panel that approves.
        items: range(12).map((i) => ({
          question: `Question ${i}`,
          key: `j${i}`,
          reference: i < 7 ? 'REVISE' : i < 11 ? 'approve' : 'REJECT',
          modeConfig: {
            content: CONTENT(i),
            ...(i >= 9
              ? {
                  jurorModels: ['sim/kind:good', 'sim/j2:fair', 'sim/j4:noverdict'],
                  foremanModel: 'sim/foreman',
                }
              : i === 5 || i === 6
                ? {
                    jurorModels: ['sim/kind:good', 'sim/j2:good', 'sim/j3:good'],
                    foremanModel: 'sim/foreman',
                  }
                : {}),
          },
        })),
      }),
      submit({
        name: 'delphi',
        defaults: {
          mode: 'delphi',
          modeConfig: {
            panelistModels: ['sim/p4:value100', 'sim/p5:value100', 'sim/p6'],
            facilitatorModel: 'sim/fac',
            questionType: 'numeric',
          },
        },
        // Numeric questions with a numeric reference (a number or text that is one) or none, and
        // three qualitative ones with an expected answer (Cohen's κ).
        items: [
          ...range(12).map((i) => ({
            question: `How many widgets of kind ${i}?`,
            key: `p${i}`,
            ...(i < 9 ? { reference: i % 3 === 0 ? String(90 + 5 * i) : 100 + i } : {}),
          })),
          ...range(3).map((i) => ({
            question: `Should team ${i} adopt a monorepo or polyrepo strategy?`,
            key: `q${i}`,
            reference: i === 2 ? 'Polyrepo' : 'Monorepo',
            modeConfig: { questionType: 'qualitative', options: ['Monorepo', 'Polyrepo'] },
          })),
        ],
      }),
    ]);
    // Graded batches (issue 37): the panel-gain section, recomputed from the grade columns.
    const [gradedCouncil, gradedDebate, gradedDelphi, gradedKeep] = await Promise.all([
      submit({
        name: 'graded council',
        defaults: {
          mode: 'council',
          councilModels: ['sim/m1:acc70', 'sim/m2:acc50', 'sim/m3:acc70'],
          chairmanModel: 'sim/chair:follow',
        },
        // Item 4's second member fails: the third answer is labelled B there, its seat stays 3.
        items: range(16).map((i) => ({
          question: `What is ${i} plus ${i + 7}?`,
          key: `gc${i}`,
          expected: 2 * i + 7,
          ...(i === 4 ? { councilModels: ['sim/m1:acc70', 'sim/m2:fail@answer', 'sim/m3:acc70'] } : {}),
        })),
      }),
      submit({
        name: 'graded debate',
        defaults: { mode: 'debate', modeConfig: { models: ['sim/a:acc60', 'sim/b:acc60', 'sim/c:acc60'] } },
        items: range(16).map((i) => ({ question: `What is ${i} times 3?`, key: `gd${i}`, expected: 3 * i })),
      }),
      submit({
        name: 'graded delphi',
        defaults: {
          mode: 'delphi',
          modeConfig: {
            panelistModels: ['sim/p4:value100', 'sim/p5:value100', 'sim/p6'],
            facilitatorModel: 'sim/fac',
            questionType: 'numeric',
          },
          grader: { type: 'numeric', relativeTolerance: 0.05 },
        },
        items: range(8).map((i) => ({
          question: `How many gadgets of kind ${i}?`,
          key: `gp${i}`,
          expected: i % 2 === 0 ? 100 : 100 + 20 * i,
        })),
      }),
      // A chairman that keeps its own answer (right on nothing alone): the panel loses to its best
      // member on many items, so the exact McNemar tests run (council does not shuffle: the same
      // every run).
      submit({
        name: 'graded council, keeping chairman',
        defaults: {
          mode: 'council',
          councilModels: ['sim/k1:acc70', 'sim/k2:acc70', 'sim/k3:acc50'],
          chairmanModel: 'sim/chair:keep',
        },
        items: range(16).map((i) => ({ question: `What is ${i} plus ${2 * i + 9}?`, expected: 3 * i + 9 })),
      }),
    ]);
    Object.assign(batches, {
      council,
      vote,
      debate,
      jury,
      delphi,
      gradedCouncil,
      gradedDebate,
      gradedDelphi,
      gradedKeep,
    });
    for (const id of Object.values(batches)) await finished(id);
    // The failed council item is retried (and fails again): its first attempt's calls still count.
    const retried = await stack.api('POST', `/api/batches/${council}/retry-failed`);
    expect(retried.status).toBe(202);
    await finished(council);
  }, 400_000);

  it('every row carries the item’s index, key and reference; the per-item export too', async () => {
    const rows = await exported(batches.vote);
    for (const r of rows) {
      expect(r.key).toBe(`v${r.index}`);
      expect(r.reference).toBe(voteReference(r.index));
    }
    const items = await stack.api<string>('GET', `/api/batches/${batches.vote}/results`);
    const lines = items.body
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { index: number; key: string; reference: string | null });
    expect(lines.map((l) => [l.index, l.key, l.reference])).toEqual(
      Array.from({ length: 20 }, (_, i) => [i, `v${i}`, voteReference(i)]),
    );
    const csv = await stack.api<string>('GET', `/api/batches/${batches.vote}/results?format=csv`);
    const sheet = parse(csv.body, { columns: true }) as Record<string, string>[];
    expect(sheet.map((r) => [r.key, r.reference])).toEqual(
      Array.from({ length: 20 }, (_, i) => [`v${i}`, voteReference(i) ?? '']),
    );
  });

  it('council: items, ballots, unparsed rankings, average ranks, first places, Borda, chairman, reference, usage, failures', async () => {
    const [r, rows] = [await report(batches.council), await exported(batches.council)];
    checkCommon(r, rows);
    // The retried item has two attempts, the latest one the report's.
    const attempts = rows.filter((x) => x.kind === 'item' && x.index === 3);
    expect(attempts.map((a) => [a.attempt, a.latest, a.status])).toEqual([
      [1, false, 'failed'],
      [2, true, 'failed'],
    ]);
    const { complete, byItem } = split(rows);
    const council = r.council!;
    // Not vacuous: a failed item with its error, eleven complete items ranked by three models.
    expect(r.items).toMatchObject({ complete: 11, failed: 1 });
    expect(r.failures.groups).toHaveLength(1);
    expect(council.models).toHaveLength(3);
    expect(council.items).toBe(complete.size);
    const rankings = [...byItem.values()].flat().filter((x) => x.kind === 'ranking');
    expect(council.ballots).toBe(rankings.filter((x) => x.parsed).length);
    expectRate(council.unparsedRankings, rankings.filter((x) => !x.parsed).length, rankings.length);

    const perModel = new Map<string, { means: number[]; firsts: number[]; borda: number; ballots: number }>();
    const state = (model: string) => {
      let s = perModel.get(model);
      if (!s) perModel.set(model, (s = { means: [], firsts: [], borda: 0, ballots: 0 }));
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
        means.set(model, mean(own.map((x) => x.value as number))!);
        state(model).ballots += own.length;
        state(model).borda += sum(own.map((x) => m - (x.value as number)));
      }
      const best = Math.min(...means.values());
      const leaders = [...means].filter(([, v]) => v - best < 1e-9).map(([model]) => model);
      for (const [model, avg] of means) {
        state(model).means.push(avg);
        state(model).firsts.push(leaders.includes(model) ? 1 / leaders.length : 0);
      }
    }
    // Self-preference: the rank a model gave its own answer against the mean of the others' ranks of it.
    const selfDifferences = new Map<string, number[]>();
    for (const itemRows of byItem.values()) {
      for (const [model, own] of groupBy(
        itemRows.filter((x) => x.kind === 'rank'),
        (x) => x.subject!,
      )) {
        const self = own.find((x) => x.model === model);
        const others = own.filter((x) => x.model !== model).map((x) => x.value as number);
        if (self === undefined || others.length === 0) continue;
        selfDifferences.set(model, [
          ...(selfDifferences.get(model) ?? []),
          (self.value as number) - mean(others)!,
        ]);
      }
    }
    for (const model of council.models) {
      const differences = selfDifferences.get(model.model) ?? [];
      expect(model.selfPreference.n).toBe(differences.length);
      close(model.selfPreference.difference.value, mean(differences));
    }
    expect(council.models.map((x) => x.model).sort()).toEqual([...perModel.keys()].sort());
    for (const model of council.models) {
      const s = perModel.get(model.model)!;
      expect(model.itemsRanked).toBe(s.means.length);
      expect(model.ballots).toBe(s.ballots);
      expect(model.bordaPoints).toBe(s.borda);
      close(model.averageRank.value, mean(s.means));
      close(model.firstPlaceShare.value, mean(s.firsts));
    }

    // Chairman: the calls at stage3 of the latest finished attempts.
    const chair = rows.filter(
      (x) => x.kind === 'call' && x.latest && x.stage === 'stage3' && TERMINAL.includes(x.status),
    );
    expect(council.chairman.itemsReached).toBe(chair.length);
    expectRate(council.chairman.failures, chair.filter((c) => !c.ok).length, chair.length);

    checkReference(
      council.reference,
      split(rows).items,
      [...byItem.values()].map((itemRows) => ({
        reference: itemRows[0].reference,
        outcome: itemRows.find((x) => x.kind === 'outcome')!.subject,
      })),
    );
  });

  /** Vote and debate: contests, wins, vote shares, invalid votes, ties, votes by position, reference. */
  function checkContest(
    section: NonNullable<BatchReport['vote']>,
    byItem: Map<string, LongRow[]>,
    allItems: LongRow[],
  ): void {
    expect(section.items).toBe(byItem.size);
    const tally = new Map<
      string,
      {
        contests: number;
        wins: number;
        received: number;
        onItems: number;
        tiedFirst: number;
        byTiebreak: number;
      }
    >();
    const brokenBy = new Set<string>();
    let valid = 0;
    let cast = 0;
    let decided = 0;
    let tied = 0;
    const positions = new Map<number, { items: number; votes: number[] }>();
    for (const itemRows of byItem.values()) {
      const outcome = itemRows.find((x) => x.kind === 'outcome')!;
      const votes = itemRows.filter((x) => x.kind === 'vote');
      const shown = itemRows.filter((x) => x.kind === 'contestant' && x.label !== null);
      const validVotes = votes.filter((v) => v.subject !== null);
      expect(outcome.value).toBe(validVotes.length);
      valid += validVotes.length;
      cast += votes.length;
      const labelCounts = countBy(validVotes.map((v) => v.label!));
      const top = Math.max(0, ...labelCounts.values());
      const topLabels = [...labelCounts].filter(([, c]) => c === top).map(([label]) => label);
      const labelModel = new Map(
        itemRows.filter((x) => x.kind === 'contestant' && x.label !== null).map((x) => [x.label!, x.model!]),
      );
      const tiedModels = new Set(topLabels.length > 1 ? topLabels.map((l) => labelModel.get(l)) : []);
      if (outcome.tiebroken) brokenBy.add(outcome.method ?? 'unknown');
      for (const model of new Set(itemRows.filter((x) => x.kind === 'contestant').map((x) => x.model!))) {
        const t = tally.get(model) ?? {
          contests: 0,
          wins: 0,
          received: 0,
          onItems: 0,
          tiedFirst: 0,
          byTiebreak: 0,
        };
        t.contests++;
        if (tiedModels.has(model)) t.tiedFirst++;
        if (outcome.subject === model && outcome.tiebroken) t.byTiebreak++;
        if (outcome.subject === model) t.wins++;
        t.received += validVotes.filter((v) => v.subject === model).length;
        t.onItems += validVotes.length;
        tally.set(model, t);
      }
      if (outcome.subject !== null) {
        decided++;
        const counts = [...countBy(validVotes.map((v) => v.label)).values()];
        if (counts.filter((c) => c === Math.max(...counts)).length > 1) tied++;
      }
      if (shown.length >= 2) {
        const group = positions.get(shown.length) ?? {
          items: 0,
          votes: new Array<number>(shown.length).fill(0),
        };
        group.items++;
        for (const v of validVotes) group.votes[(v.value as number) - 1]++;
        positions.set(shown.length, group);
      }
    }
    expectRate(section.invalidVotes, cast - valid, cast);
    expectRate(section.ties.tied, tied, decided);
    expect(
      section.ties.brokenBy
        .filter((c) => c.count > 0)
        .map((c) => c.category)
        .sort(),
    ).toEqual([...brokenBy].sort());
    expect(section.models.map((m) => m.model).sort()).toEqual([...tally.keys()].sort());
    for (const m of section.models) {
      const t = tally.get(m.model)!;
      expect({
        contests: m.contests,
        wins: m.wins,
        tiedFirst: m.tiedFirst,
        byTiebreak: m.winsByTiebreak,
      }).toEqual({
        contests: t.contests,
        wins: t.wins,
        tiedFirst: t.tiedFirst,
        byTiebreak: t.byTiebreak,
      });
      expectRate(m.winRate, t.wins, t.contests);
      expectRate(m.voteShare, t.received, t.onItems);
    }
    expect(section.positionBias.computable).toBe(true);
    expect(positions.size).toBeGreaterThan(0);
    expect(valid).toBeGreaterThan(0);
    expect(
      section.positionBias.groups.map((g) => ({
        k: g.answersShown,
        items: g.items,
        votes: g.positions.map((p) => p.votes.count),
      })),
    ).toEqual(
      [...positions].sort(([a], [b]) => a - b).map(([k, g]) => ({ k, items: g.items, votes: g.votes })),
    );
    checkReference(
      section.reference,
      allItems,
      [...byItem.values()].map((itemRows) => ({
        reference: itemRows[0].reference,
        outcome: itemRows.find((x) => x.kind === 'outcome')!.subject,
      })),
    );
  }

  it('vote: win rates, vote shares, invalid votes, ties, votes by position, reference, usage, failures', async () => {
    const [r, rows] = [await report(batches.vote), await exported(batches.vote)];
    checkCommon(r, rows);
    checkContest(r.vote!, split(rows).byItem, split(rows).items);
  });

  it('debate: the same, and revisions, the winner’s decision and revised winners', async () => {
    const [r, rows] = [await report(batches.debate), await exported(batches.debate)];
    checkCommon(r, rows);
    const { byItem } = split(rows);
    const debate = r.debate!;
    checkContest(debate, byItem, split(rows).items);
    const judged = [...byItem.values()].flat();
    const revisions = groupBy(
      judged.filter((x) => x.kind === 'revision'),
      (x) => x.model!,
    );
    expect(debate.revisions.map((m) => m.model).sort()).toEqual([...revisions.keys()].sort());
    for (const m of debate.revisions) {
      const own = revisions.get(m.model)!;
      const of = (d: string | null) => own.filter((x) => x.verdict === d).length;
      expect(m.revisions).toBe(own.length);
      expectRate(m.revise, of('REVISE'), own.length);
      expectRate(m.stand, of('STAND'), own.length);
      expectRate(m.merge, of('MERGE'), own.length);
      expectRate(m.unparsed, own.length - of('REVISE') - of('STAND') - of('MERGE'), own.length);
    }
    const outcomes = judged.filter((x) => x.kind === 'outcome' && x.subject !== null);
    const decisions = countBy(
      outcomes.map((o) => (['REVISE', 'STAND', 'MERGE'].includes(o.verdict ?? '') ? o.verdict! : 'unparsed')),
    );
    expect(debate.winnerDecision.n).toBe(outcomes.length);
    for (const c of debate.winnerDecision.categories) expect(c.count).toBe(decisions.get(c.category) ?? 0);
    expectRate(
      debate.winnerWasRevised,
      outcomes.filter((o) => o.verdict === 'REVISE' || o.verdict === 'MERGE').length,
      outcomes.length,
    );
  });

  it('jury: verdicts, juror verdicts, dimension scores and item means, leniency, parse failures, reference', async () => {
    const [r, rows] = [await report(batches.jury), await exported(batches.jury)];
    checkCommon(r, rows);
    const { byItem } = split(rows);
    const jury = r.jury!;
    expect(jury.items).toBe(byItem.size);
    const judged = [...byItem.values()].flat();
    const finals = judged.filter((x) => x.kind === 'outcome').map((x) => x.verdict);
    const finalCounts = countBy(finals.filter((v): v is string => v !== null));
    expect(jury.verdicts.n).toBe(sum([...finalCounts.values()]));
    for (const c of jury.verdicts.categories) expect(c.count).toBe(finalCounts.get(c.category) ?? 0);
    const verdicts = judged.filter((x) => x.kind === 'verdict');
    const jurorCounts = countBy(verdicts.map((v) => v.verdict).filter((v): v is string => v !== null));
    expect(jury.jurorVerdicts.n).toBe(sum([...jurorCounts.values()]));
    for (const c of jury.jurorVerdicts.categories) expect(c.count).toBe(jurorCounts.get(c.category) ?? 0);

    // Dimensions: every score, and the mean over items of the panel's mean.
    const scores = judged.filter((x) => x.kind === 'score');
    const dimensions = groupBy(scores, (x) => x.subject!);
    expect(jury.dimensions.map((d) => d.dimension).sort()).toEqual([...dimensions.keys()].sort());
    for (const d of jury.dimensions) {
      const own = dimensions.get(d.dimension)!;
      expect(d.scores.n).toBe(own.length);
      close(d.scores.mean, mean(own.map((x) => x.value as number)));
      const itemMeans = [...groupBy(own, (x) => x.messageId).values()].map((s) =>
        mean(s.map((x) => x.value as number))!,
      );
      expect(d.itemMean.n).toBe(itemMeans.length);
      close(d.itemMean.value, mean(itemMeans));
      // Krippendorff's α, interval metric: items as units, pairable values those of units with two or more.
      const units = [...groupBy(own, (x) => x.messageId).values()]
        .map((u) => u.map((x) => x.value as number))
        .filter((u) => u.length >= 2);
      expect(d.alpha.n).toBe(units.length);
      const pairable = units.flat();
      expect(d.alpha.pairableValues).toBe(pairable.length);
      const squares = (values: number[]) => {
        let total = 0;
        for (const a of values) for (const b of values) total += (a - b) ** 2;
        return total;
      };
      const disagreement = sum(units.map((u) => squares(u) / (u.length - 1))) / pairable.length;
      const expectedDisagreement = squares(pairable) / (pairable.length * (pairable.length - 1));
      expect(d.alpha.value).not.toBeNull();
      close(d.alpha.value, 1 - disagreement / expectedDisagreement);
    }

    // Leniency: a juror's mean score on an item minus the panel's mean of those, over items.
    const deviations = new Map<string, number[]>();
    for (const itemScores of groupBy(scores, (x) => x.messageId).values()) {
      const overall = [...groupBy(itemScores, (x) => x.model!)].map(
        ([juror, own]) => [juror, mean(own.map((x) => x.value as number))!] as const,
      );
      if (overall.length < 2) continue;
      const panel = mean(overall.map(([, v]) => v))!;
      for (const [juror, v] of overall) deviations.set(juror, [...(deviations.get(juror) ?? []), v - panel]);
    }
    const assessments = groupBy(verdicts, (x) => x.model!);
    expect(deviations.size).toBe(6);
    expect(jury.jurors.map((j) => j.juror).sort()).toEqual([...assessments.keys()].sort());
    for (const juror of jury.jurors) {
      const own = deviations.get(juror.juror) ?? [];
      expect(juror.leniency.n).toBe(own.length);
      close(juror.leniency.value, mean(own));
      const mine = assessments.get(juror.juror)!;
      expectRate(juror.parseFailures, mine.filter((x) => !x.parsed).length, mine.length);
      const counts = countBy(mine.map((x) => x.verdict).filter((v): v is string => v !== null));
      for (const c of juror.verdicts.categories) expect(c.count).toBe(counts.get(c.category) ?? 0);
    }
    // Fleiss' κ on the juror verdicts: mean pairwise agreement per item against the squared mean shares.
    const verdictSets = [...groupBy(verdicts, (x) => x.messageId).values()].map((v) =>
      v.map((x) => x.verdict).filter((x): x is string => x !== null),
    );
    const rated = verdictSets.filter((v) => v.length >= 2);
    const observed = mean(
      rated.map((v) => sum([...countBy(v).values()].map((c) => c * (c - 1))) / (v.length * (v.length - 1))),
    );
    const withRatings = verdictSets.filter((v) => v.length > 0);
    const shares = new Map<string, number>();
    for (const v of withRatings)
      for (const [category, c] of countBy(v))
        shares.set(category, (shares.get(category) ?? 0) + c / v.length);
    const expected = sum([...shares.values()].map((share) => (share / withRatings.length) ** 2));
    close(jury.fleissKappa.observedAgreement, observed);
    close(jury.fleissKappa.expectedAgreement, expected);
    if (jury.fleissKappa.value !== null)
      close(jury.fleissKappa.value, (observed! - expected) / (1 - expected));
    expect(jury.fleissKappa.n).toBe(
      [...groupBy(verdicts, (x) => x.messageId).values()].filter(
        (v) => v.filter((x) => x.verdict !== null).length >= 2,
      ).length,
    );
    checkReference(
      jury.reference,
      split(rows).items,
      [...byItem.values()].map((itemRows) => ({
        reference: itemRows[0].reference,
        outcome: itemRows.find((x) => x.kind === 'outcome')!.verdict,
      })),
      (v) => v.toUpperCase(),
    );
  });

  it('Delphi: convergence, rounds, final spread, movement toward the median, final values, reference counts', async () => {
    const [r, rows] = [await report(batches.delphi), await exported(batches.delphi)];
    checkCommon(r, rows);
    const { byItem } = split(rows);
    const delphi = r.delphi!;
    const outcomes = [...byItem.values()].map((itemRows) => itemRows.find((x) => x.kind === 'outcome')!);
    expect(delphi.items).toBe(byItem.size);
    expect(delphi.numericItems).toBe(outcomes.filter((o) => o.method === 'numeric').length);
    expect(delphi.qualitativeItems).toBe(outcomes.filter((o) => o.method === 'qualitative').length);
    const converged = outcomes.filter((o) => o.converged);
    expectRate(delphi.converged, converged.length, outcomes.length);
    const convergenceRounds = converged.map((o) => o.round).filter((x): x is number => x !== null);
    expect(delphi.roundsToConvergence.n).toBe(convergenceRounds.length);
    close(delphi.roundsToConvergence.mean, mean(convergenceRounds));
    const lastRounds = [...byItem.values()].map((itemRows) =>
      itemRows.filter((x) => x.kind === 'round').at(-1),
    );
    const roundCounts = countBy(lastRounds.filter((x) => x !== undefined).map((x) => String(x!.round)));
    for (const c of delphi.rounds.categories) expect(c.count).toBe(roundCounts.get(c.category) ?? 0);
    const cvs = lastRounds.map((x) => x?.cv ?? null).filter((x): x is number => x !== null);
    expect(delphi.finalCv.n).toBe(cvs.length);
    close(delphi.finalCv.mean, mean(cvs));

    // Final values: the mode's final value (the mean of the last round's estimates, issue 36) is the
    // value reported and measured against the reference; a round row carries the round's median.
    for (const [messageId, itemRows] of byItem) {
      if (itemRows.find((x) => x.kind === 'outcome')!.method !== 'numeric') continue;
      const last = itemRows.filter((x) => x.kind === 'round').at(-1)!;
      const finalEstimates = itemRows.filter(
        (x) => x.kind === 'estimate' && x.round === last.round && typeof x.value === 'number',
      );
      const values = finalEstimates.map((x) => x.value as number).sort((a, b) => a - b);
      const middle = Math.floor(values.length / 2);
      const median = values.length % 2 ? values[middle] : (values[middle - 1] + values[middle]) / 2;
      close(last.value as number, median);
      const outcome = itemRows.find((x) => x.kind === 'outcome')!;
      expect(messageId).toBe(outcome.messageId);
      close(outcome.value as number, mean(values));
    }

    // Movement: round r's fresh numeric answers against round r − 1's median.
    for (const movement of delphi.movement) {
      let n = 0;
      let toward = 0;
      let away = 0;
      const closed: number[] = [];
      for (const itemRows of byItem.values()) {
        const previous = itemRows.find((x) => x.kind === 'round' && x.round === movement.round - 1);
        if (!previous || typeof previous.value !== 'number') continue;
        for (const e of itemRows.filter((x) => x.kind === 'estimate' && x.round === movement.round)) {
          if (e.carriedForward || typeof e.value !== 'number' || typeof e.previous !== 'number') continue;
          const before = Math.abs(e.previous - previous.value);
          const after = Math.abs(e.value - previous.value);
          n++;
          if (after < before) toward++;
          else if (after > before) away++;
          if (before > 0) closed.push((before - after) / before);
        }
      }
      expect(movement.n).toBe(n);
      expectRate(movement.movedTowardMedian, toward, n);
      expectRate(movement.movedAway, away, n);
      expect(movement.distanceClosed.n).toBe(closed.length);
      close(movement.distanceClosed.value, mean(closed));
    }
    expect(delphi.movement.length).toBeGreaterThan(0);

    const withReference = outcomes.filter(
      (o) => o.method === 'numeric' && o.reference !== null && Number.isFinite(Number(o.reference)),
    );
    const all = split(rows).items;
    const allWithReference = all.filter((o) => o.reference !== null && String(o.reference).trim() !== '');
    expect(delphi.reference).toMatchObject({
      itemsWithReference: allWithReference.length,
      itemsWithoutReference: all.length - allWithReference.length,
    });
    const errors = withReference.map((o) => Math.abs((o.value as number) - Number(o.reference)));
    expect(delphi.reference!.numeric!.meanAbsoluteError.n).toBe(errors.length);
    close(delphi.reference!.numeric!.meanAbsoluteError.value, mean(errors));
    close(
      delphi.reference!.numeric!.meanSignedError.value,
      mean(withReference.map((o) => (o.value as number) - Number(o.reference))),
    );
    expect(delphi.reference!.numeric!.medianAbsoluteError.n).toBe(errors.length);
  });

  /**
   * Every numeric leaf of the JSON report recomputed from the long export alone
   * (test/support/report-recompute.ts): intervals, p-values and coefficients too, with the library's
   * estimators on inputs built from the rows. A figure the recomputation does not produce fails.
   */
  describe('every number of the JSON report, intervals and p-values included', () => {
    /** The first interval of a report (depth first). */
    function findInterval(node: unknown): { lower: number } {
      const stack = [node];
      while (stack.length > 0) {
        const next = stack.shift();
        if (next === null || typeof next !== 'object') continue;
        const interval = (next as { interval?: unknown }).interval;
        if (interval !== null && typeof interval === 'object') return interval as { lower: number };
        stack.push(...Object.values(next));
      }
      throw new Error('the report has no interval');
    }

    async function recomputed(
      mode: string,
      section: (r: BatchReport, v: ExportView) => object,
      batch = mode,
    ) {
      const [r, rows] = [await report(batches[batch]), await exported(batches[batch])];
      const view = viewOf(rows, r);
      const gain = panelGainFigures(r, view);
      const expected = {
        ...commonFigures(r, view),
        [mode]: section(r, view),
        // Graded batches only: an ungraded report has no panel-gain section, and none is recomputed.
        ...(gain.length > 0 ? { panelGain: gain } : {}),
      };
      expect('panelGain' in r).toBe(gain.length > 0);
      const { mismatches, missing, covered } = compareFigures(r, expected);
      expect(mismatches).toEqual([]);
      expect(missing).toEqual([]);
      // The comparison can fail: an interval bound off by 1e-6 and a figure nobody recomputes are caught.
      const tampered = JSON.parse(JSON.stringify(r)) as BatchReport & { extra?: { figure: number } };
      const withInterval = findInterval(tampered);
      withInterval.lower += 1e-6;
      tampered.extra = { figure: 1 };
      const caught = compareFigures(tampered, expected);
      expect(caught.mismatches).toHaveLength(1);
      expect(caught.missing).toEqual(['$.extra.figure = 1']);
      expect(covered).toBeGreaterThan(100);
      if (gain.length > 0) {
        // The panel-gain figures are compared too: a moved bound, a changed count or a reworded
        // sentence is caught.
        const moved = JSON.parse(JSON.stringify(r)) as BatchReport;
        const [first] = moved.panelGain!;
        first.panel.interval!.upper += 1e-6;
        (first.members[0].accuracy as { count: number }).count += 1;
        first.sentences[0] = `${first.sentences[0]} `;
        expect(compareFigures(moved, expected).mismatches).toHaveLength(3);
      }
      return r;
    }

    it('council', async () => {
      const r = await recomputed('council', councilFigures);
      // Not vacuous: bootstrap intervals on every model's figures, κ against the reference.
      for (const m of r.council!.models) expect(m.averageRank.interval).not.toBeNull();
      expect(r.council!.reference!.cohen!.kappa.n).toBeGreaterThan(0);
    });

    it('vote: both position tests and their Holm-adjusted p-values', async () => {
      const r = await recomputed('vote', (report, view) => contestFigures(report, view, 'vote'));
      const groups = r.vote!.positionBias.groups;
      expect(groups.map((g) => g.answersShown)).toEqual([3, 4]);
      for (const g of groups) {
        expect(g.test.run).toBe(true);
        if (g.test.run) expect(g.test.holmAdjustedPValue).not.toBeNull();
      }
    });

    it('debate', async () => {
      const r = await recomputed('debate', (report, view) => contestFigures(report, view, 'debate'));
      expect(r.debate!.positionBias.groups[0].test.run).toBe(true);
    });

    it('jury', async () => {
      const r = await recomputed('jury', juryFigures);
      expect(r.jury!.fleissKappa.value).not.toBeNull();
      expect(r.jury!.jurors.some((j) => j.verdictUnread.count > 0)).toBe(true);
    });

    it('graded council: panel gain from the grade columns, a missing member at its own seat', async () => {
      const r = await recomputed('council', councilFigures, 'gradedCouncil');
      const [gain] = r.panelGain!;
      expect(gain.mode).toBe('council');
      expect(gain.items).toBe(16);
      expect(gain.members.map((m) => [m.seat, m.model])).toEqual([
        [1, 'sim/m1:acc70'],
        [2, 'sim/m2:acc50'],
        [3, 'sim/m3:acc70'],
      ]);
      expect(gain.members[1].accuracy.missing).toBe(1);
      expect(gain.panel.interval).not.toBeNull();
      expect(gain.perCorrect.tokens.value.value).not.toBeNull();
      expect(r.method.methods.some((m) => m.usedFor.some((u) => u.startsWith('panel gain (council)')))).toBe(
        true,
      );
    });

    it('graded council under a keeping chairman: the exact tests and Holm recomputed too', async () => {
      const r = await recomputed('council', councilFigures, 'gradedKeep');
      const [gain] = r.panelGain!;
      expect(gain.panel.count).toBe(0);
      expect(gain.panelMinusBest!.test.run).toBe(true);
      expect(gain.panelMinusMajority.test.run).toBe(true);
      expect(gain.panelMinusBest!.test.holmAdjustedPValue).not.toBeNull();
      expect(r.method.methods.map((m) => m.name)).toEqual(
        expect.arrayContaining(['exact McNemar test', 'Holm step-down adjustment']),
      );
    });

    it('graded debate: revisions fixed and broke, from the revision rows’ grades', async () => {
      const r = await recomputed(
        'debate',
        (report, view) => contestFigures(report, view, 'debate'),
        'gradedDebate',
      );
      const [gain] = r.panelGain!;
      expect(gain.mode).toBe('debate');
      expect(gain.revision).not.toBeNull();
      expect(gain.revision!.answers).toBe(48);
    });

    it('graded Delphi: first-round median error against the final one', async () => {
      const r = await recomputed('delphi', delphiFigures, 'gradedDelphi');
      const [gain] = r.panelGain!;
      expect(gain.mode).toBe('delphi');
      expect(gain.delphi!.items).toBe(8);
    });

    it('Delphi: numeric errors and coverage, κ of the qualitative answers', async () => {
      const r = await recomputed('delphi', delphiFigures);
      expect(r.delphi!.qualitativeItems).toBe(3);
      expect(r.delphi!.reference!.numeric!.meanAbsoluteError.n).toBeGreaterThan(0);
      expect(r.delphi!.reference!.cohen).not.toBeNull();
    });
  });
});
