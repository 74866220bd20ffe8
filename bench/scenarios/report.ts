import { cpus } from 'node:os';
import type { BatchReport } from '@conclave/contracts';
import type { DataSource, EntityManager } from 'typeorm';
import { juryItems, JURY_DEFAULTS, submitBatch } from '../lib/batch';
import { http } from '../lib/client';
import { ProcSampler, rssMb, type CpuReport } from '../lib/proc';
import { BenchStack } from '../lib/stack';
import { round, sleep, summary } from '../lib/stats';
import { HarnessError, type Check, type Scenario } from '../lib/types';
import { describeCpu } from './overhead';

const LIMIT_MS = 2000;
const LIMIT_RSS_MB = 300;
const VERDICTS = ['APPROVE', 'REVISE', 'REJECT'] as const;

/** A column name as SQL spells it. */
const quote = (name: string) => `"${name.replace(/"/g, '""')}"`;

/** The table's columns a row copy writes (generated columns excluded), in their order. */
async function columnsOf(db: EntityManager, table: string): Promise<string[]> {
  const rows: { column_name: string }[] = await db.query(
    `SELECT column_name FROM information_schema.columns
     WHERE table_schema = current_schema() AND table_name = $1
       AND is_generated = 'NEVER' AND (is_identity = 'NO' OR identity_generation = 'BY DEFAULT')
     ORDER BY ordinal_position`,
    [table],
  );
  if (rows.length === 0) throw new HarnessError(`no table ${table}`);
  return rows.map((r) => r.column_name);
}

/**
 * Copies rows of `table` selected by `from` (which names the source row `x`): every column as it
 * is, except those `overrides` gives an expression for. Columns added by later migrations are
 * copied too, so the copies stay shaped exactly as the rows the worker wrote.
 */
async function copyRows(
  db: EntityManager,
  table: string,
  from: string,
  overrides: Record<string, string>,
  params: unknown[] = [],
): Promise<number> {
  const columns = await columnsOf(db, table);
  for (const name of Object.keys(overrides)) {
    if (!columns.includes(name)) throw new HarnessError(`${table} has no column ${name}`);
  }
  const select = columns.map((c) => overrides[c] ?? `x.${quote(c)}`).join(', ');
  const [{ n }]: { n: number }[] = await db.query(
    `WITH copied AS (
       INSERT INTO ${table} (${columns.map(quote).join(', ')}) SELECT ${select} FROM ${from} RETURNING 1)
     SELECT count(*)::int AS n FROM copied`,
    params,
  );
  return n;
}

/**
 * A batch of `total` finished jury items, written with SQL: item i is a copy of the real
 * template item i mod (template size) — its conversation, both messages, the stage rows, the model
 * calls and the stored events — with new ids, in a new batch. Returns the batch's id and the rows written.
 */
export async function cloneBatch(
  db: DataSource,
  templateBatchId: string,
  total: number,
  name: string,
): Promise<{ batchId: string; rows: Record<string, number> }> {
  return db.transaction(async (m) => {
    const [{ n: size }]: { n: number }[] = await m.query(
      `SELECT count(*)::int AS n FROM messages WHERE batch_id = $1 AND role = 'assistant'`,
      [templateBatchId],
    );
    if (size === 0) throw new HarnessError('the template batch has no items');
    // Statements with parameters cannot create a table: create them empty, then fill them.
    await m.query('CREATE TEMP TABLE bench_template (k int, conv uuid, umsg uuid, amsg uuid) ON COMMIT DROP');
    await m.query(
      'CREATE TEMP TABLE bench_map (i int, k int, conv uuid, umsg uuid, amsg uuid) ON COMMIT DROP',
    );
    await m.query(
      `INSERT INTO bench_template
       SELECT (row_number() OVER (ORDER BY a.batch_index) - 1)::int, a.conversation_id, u.id, a.id
       FROM messages a
       JOIN messages u ON u.conversation_id = a.conversation_id AND u.turn = a.turn AND u.role = 'user'
       WHERE a.batch_id = $1 AND a.role = 'assistant'`,
      [templateBatchId],
    );
    await m.query(
      `INSERT INTO bench_map
       SELECT i, i % $2::int, gen_random_uuid(), gen_random_uuid(), gen_random_uuid()
       FROM generate_series(0, $1::int - 1) AS i`,
      [total, size],
    );
    await m.query('CREATE INDEX ON bench_map (k)');
    await m.query('ANALYZE bench_template');
    await m.query('ANALYZE bench_map');
    const [{ id: batchId }]: { id: string }[] = await m.query('SELECT gen_random_uuid() AS id');
    const rows: Record<string, number> = {};
    rows.batches = await copyRows(
      m,
      'batches',
      'batches x WHERE x.id = $1',
      { id: '$2::uuid', name: '$3::text', total: '$4::int' },
      [templateBatchId, batchId, name, total],
    );
    const join = (source: string, key: string) =>
      `bench_map b JOIN bench_template t ON t.k = b.k JOIN ${source} x ON x.${key}`;
    rows.conversations = await copyRows(m, 'conversations', join('conversations', 'id = t.conv'), {
      id: 'b.conv',
    });
    rows.messages =
      (await copyRows(m, 'messages', join('messages', 'id = t.umsg'), {
        id: 'b.umsg',
        conversation_id: 'b.conv',
      })) +
      (await copyRows(
        m,
        'messages',
        join('messages', 'id = t.amsg'),
        { id: 'b.amsg', conversation_id: 'b.conv', batch_id: '$1::uuid', batch_index: 'b.i' },
        [batchId],
      ));
    rows.deliberation_stages = await copyRows(
      m,
      'deliberation_stages',
      join('deliberation_stages', 'message_id = t.amsg'),
      { id: 'gen_random_uuid()', message_id: 'b.amsg' },
    );
    rows.model_calls = await copyRows(m, 'model_calls', join('model_calls', 'message_id = t.amsg'), {
      id: 'gen_random_uuid()',
      message_id: 'b.amsg',
    });
    rows.deliberation_events = await copyRows(
      m,
      'deliberation_events',
      join('deliberation_events', 'message_id = t.amsg'),
      { message_id: 'b.amsg' },
    );
    return { batchId, rows };
  });
}

/** Waits until the batch has finished (GET /api/batches/:id has finishedAt). */
async function waitForBatch(baseUrl: string, batchId: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const view = await http<{ finishedAt: string | null; complete: number; total: number }>(
      baseUrl,
      'GET',
      `/api/batches/${batchId}`,
    );
    if (view.status === 200 && view.body.finishedAt) return;
    if (Date.now() > deadline)
      throw new HarnessError(`template batch not finished after ${timeoutMs / 1000} s`);
    await sleep(250);
  }
}

interface Fetched {
  ms: number;
  bytes: number;
  status: number;
  /** Peak RSS of the gateway while the request ran (MB). */
  peakRssMb: number;
}

/** A GET against the gateway, timed, with the gateway's RSS sampled every 10 ms meanwhile. */
async function timedGet(
  baseUrl: string,
  path: string,
  gatewayPid: number,
): Promise<Fetched & { text: string }> {
  let peak = rssMb(gatewayPid) ?? 0;
  const timer = setInterval(() => {
    const mb = rssMb(gatewayPid);
    if (mb !== null && mb > peak) peak = mb;
  }, 10);
  try {
    const started = performance.now();
    const response = await fetch(`${baseUrl}${path}`);
    const text = await response.text();
    const ms = performance.now() - started;
    const mb = rssMb(gatewayPid);
    if (mb !== null && mb > peak) peak = mb;
    return { ms, bytes: Buffer.byteLength(text), status: response.status, peakRssMb: peak, text };
  } finally {
    clearInterval(timer);
  }
}

export const report: Scenario = {
  name: 'report',
  title: 'The report of a large batch',
  target: `the report of a 10 000-item jury batch in ≤ ${LIMIT_MS / 1000} s with gateway RSS ≤ ${LIMIT_RSS_MB} MB`,
  async run(ctx) {
    const items = ctx.quick ? 1000 : 10_000;
    const templates = ctx.quick ? 100 : 500;
    const trials = ctx.quick ? 3 : 5;
    const stack = await new BenchStack(ctx, { SIM_LATENCY_MS: '0', WORKER_CONCURRENCY: '32' }).init();
    const cpu: Record<string, CpuReport> = {};
    try {
      const gateway = await stack.spawnGateway();
      const worker = await stack.spawnWorker();
      const gatewayPid = gateway.child.pid ?? 0;

      // 1. A real jury batch: the rows the report reads, as the worker writes them.
      const t0 = Date.now();
      const template = await submitBatch(
        stack.baseUrl,
        juryItems(templates, 'report').map((item, i) => ({ ...item, reference: VERDICTS[i % 3] })),
        { concurrency: 32, name: 'report template' },
      );
      await waitForBatch(stack.baseUrl, template.batchId, 300_000);
      const templateS = (Date.now() - t0) / 1000;
      const [{ complete }]: { complete: number }[] = await stack.db.query(
        `SELECT count(*) FILTER (WHERE status = 'complete')::int AS complete
         FROM messages WHERE batch_id = $1 AND role = 'assistant'`,
        [template.batchId],
      );
      if (complete !== templates)
        throw new HarnessError(`template: ${complete} of ${templates} items complete`);
      ctx.log(`  report: ${templates} real jury items in ${round(templateS, 1)} s`);
      await stack.stopWorker(worker);

      // 2. Two batches of `items` copies (the second for a comparison), written with SQL.
      const t1 = Date.now();
      const a = await cloneBatch(stack.db, template.batchId, items, `report ${items} A`);
      const b = await cloneBatch(stack.db, template.batchId, items, `report ${items} B`);
      await stack.db.query('ANALYZE');
      const seedS = (Date.now() - t1) / 1000;
      ctx.log(`  report: 2 × ${items} items written with SQL in ${round(seedS, 1)} s`);

      // 3. The reports, timed, with the gateway's RSS sampled meanwhile.
      const idleRssMb = round(rssMb(gatewayPid) ?? Number.NaN, 0);
      const kinds = [
        { key: 'json', label: 'report (JSON)', path: `/api/batches/${a.batchId}/report` },
        { key: 'md', label: 'report (Markdown)', path: `/api/batches/${a.batchId}/report?format=md` },
        {
          key: 'compare',
          label: 'compare (JSON)',
          path: `/api/batches/compare?a=${a.batchId}&b=${b.batchId}`,
        },
      ];
      const measured: Record<string, Fetched[]> = {};
      let sampleReport = '';
      for (const kind of kinds) {
        measured[kind.key] = [];
        const from = ctx.sampler.cpu();
        for (let t = 0; t < trials; t++) {
          const fetched = await timedGet(stack.baseUrl, kind.path, gatewayPid);
          if (fetched.status !== 200) {
            throw new HarnessError(`GET ${kind.path}: ${fetched.status} ${fetched.text.slice(0, 300)}`);
          }
          if (kind.key === 'json' && t === 0) sampleReport = fetched.text;
          const { text: _text, ...figures } = fetched;
          measured[kind.key].push(figures);
          ctx.log(
            `  ${kind.label}: ${round(fetched.ms, 0)} ms, ${round(fetched.bytes / 1024, 1)} KB, gateway RSS ≤ ${round(fetched.peakRssMb, 0)} MB`,
          );
          await sleep(200);
        }
        cpu[kind.label] = ProcSampler.report(from, ctx.sampler.cpu(), cpus().length);
      }
      const seen = juryFigures(sampleReport);
      if (seen.juryItems !== items) {
        throw new HarnessError(
          `the report counted ${seen.juryItems} jury items of ${items}: the copied rows are not read as the worker's`,
        );
      }

      const stats = Object.fromEntries(
        kinds.map((k) => [
          k.key,
          {
            ms: summary(
              measured[k.key].map((f) => f.ms),
              0,
            ),
            firstMs: round(measured[k.key][0].ms, 0),
            kb: round(measured[k.key][0].bytes / 1024, 1),
            peakRssMb: round(Math.max(...measured[k.key].map((f) => f.peakRssMb)), 0),
          },
        ]),
      );
      const slowest = (key: string) => stats[key].ms.max;
      const checks: Check[] = [
        {
          what: `${items}-item jury batch: slowest of ${trials} reports (JSON)`,
          target: `≤ ${LIMIT_MS} ms`,
          value: `${slowest('json')} ms (median ${stats.json.ms.p50} ms)`,
          met: slowest('json') <= LIMIT_MS,
        },
        {
          what: `${items}-item jury batch: slowest of ${trials} reports (Markdown)`,
          target: `≤ ${LIMIT_MS} ms`,
          value: `${slowest('md')} ms (median ${stats.md.ms.p50} ms)`,
          met: slowest('md') <= LIMIT_MS,
        },
        {
          what: 'gateway peak RSS while reporting',
          target: `≤ ${LIMIT_RSS_MB} MB`,
          value: `${Math.max(stats.json.peakRssMb, stats.md.peakRssMb)} MB (idle ${idleRssMb} MB)`,
          met: Math.max(stats.json.peakRssMb, stats.md.peakRssMb) <= LIMIT_RSS_MB,
        },
      ];
      const limits: string[] = [];
      if (!checks.every((c) => c.met)) {
        limits.push(
          `CPU while the JSON reports ran: ${describeCpu(cpu['report (JSON)'])}.`,
          'What would move it: fewer rows read per item (the juror rows only, not the calls), or a report stored when the batch ends and served from there.',
        );
      }
      return {
        name: 'report',
        title: this.title,
        target: this.target,
        parameters: {
          items,
          templateItems: templates,
          trials,
          jury: JURY_DEFAULTS.modeConfig,
          gateways: 1,
          workers: 0,
        },
        figures: {
          report: stats.json,
          markdown: stats.md,
          compare: stats.compare,
          idleRssMb,
          reportSays: seen,
          templateS: round(templateS, 1),
          seedS: round(seedS, 1),
          rowsWritten: a.rows,
          trialsMs: Object.fromEntries(kinds.map((k) => [k.key, measured[k.key].map((f) => round(f.ms, 0))])),
          trialsPeakRssMb: Object.fromEntries(
            kinds.map((k) => [k.key, measured[k.key].map((f) => round(f.peakRssMb, 0))]),
          ),
        },
        checks,
        tables: [
          {
            table: {
              columns: [
                'request',
                'items',
                'answer',
                'trials (ms)',
                'median (ms)',
                'slowest (ms)',
                'gateway peak RSS',
                'per trial (MB)',
              ],
              rows: kinds.map((k) => [
                k.key === 'compare' ? `${k.label}, ${items} vs ${items}` : k.label,
                items,
                `${stats[k.key].kb} KB`,
                measured[k.key].map((f) => round(f.ms, 0)).join(', '),
                stats[k.key].ms.p50,
                `**${stats[k.key].ms.max}**`,
                `${stats[k.key].peakRssMb} MB`,
                measured[k.key].map((f) => round(f.peakRssMb, 0)).join(', '),
              ]),
            },
          },
          {
            caption: 'Rows the report reads, written with SQL (one batch)',
            table: {
              columns: Object.keys(a.rows),
              rows: [Object.values(a.rows)],
            },
          },
        ],
        method: [
          `A real jury batch of ${templates} items (the issue's jury: three simulated jurors and a foreman, each item with a reference verdict) runs through one worker; its rows are the template. ` +
            `Two batches of ${items} items are then written with SQL in one transaction each: item i copies template item i mod ${templates} (conversation, both messages, every deliberation_stages row, model_calls row and stored event, every column as the worker wrote it) with new ids.`,
          `With the worker stopped, one gateway process (${ctx.runtime.kind === 'compiled' ? 'compiled JavaScript' : 'ts-node'}) answers ${trials} GETs of each request in turn; a figure is the client's time from sending the request to having read the whole answer. The first request of each kind is cold.`,
          "The gateway's RSS (VmRSS of /proc/<pid>/status) is sampled every 10 ms while each request runs; the table gives the highest sample.",
        ],
        limits,
        notes: [
          `Template: ${templates} real items in ${round(templateS, 1)} s; the two ${items}-item copies took ${round(seedS, 1)} s to write.`,
          "The gateway's RSS climbs from one request to the next and drops when V8 collects (see the per-trial peaks): much of the rise is garbage of earlier requests awaiting collection, not data a report keeps; two reports computed at the same time would each add their own working set.",
          `The JSON report counted ${seen.juryItems} complete jury items (${seen.itemsWithReference} with a reference); Fleiss' κ ${seen.fleissKappa === null ? 'not computed' : round(seen.fleissKappa, 3)}.`,
        ],
        evidence: {
          cpu,
          peakRssMb: Object.fromEntries(kinds.map((k) => [k.label, { 'gateway 1': stats[k.key].peakRssMb }])),
        },
      };
    } finally {
      await stack.stop();
    }
  },
};

/** What a JSON report of a jury batch says about it, to check that the copies read as real items. */
function juryFigures(text: string): {
  complete: number | null;
  juryItems: number | null;
  fleissKappa: number | null;
  itemsWithReference: number | null;
} {
  try {
    const report = JSON.parse(text) as BatchReport;
    return {
      complete: report.items.complete,
      juryItems: report.jury?.items ?? null,
      fleissKappa: report.jury?.fleissKappa.value ?? null,
      itemsWithReference: report.jury?.reference?.itemsWithReference ?? null,
    };
  } catch {
    return { complete: null, juryItems: null, fleissKappa: null, itemsWithReference: null };
  }
}
