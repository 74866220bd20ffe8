import { cpus } from 'node:os';
import {
  CONVERSATION_TABLES,
  ensureEventPartitions,
  listEventPartitions,
  weekPartition,
  WEEK_MS,
  type ConversationTable,
} from '@conclave/persistence';
import { Queue, type Job } from 'bullmq';
import IORedis from 'ioredis';
import type { QueryRunner } from 'typeorm';
import type { LifecycleRunSummary } from '../../apps/worker/src/maintenance/data-lifecycle.job';
import { startDeliberation } from '../lib/client';
import { ProcSampler, type CpuReport } from '../lib/proc';
import { BenchStack } from '../lib/stack';
import { mapLimit, round, sleep } from '../lib/stats';
import { HarnessError, type Check, type Scenario } from '../lib/types';
import { describeCpu, requestFor } from './overhead';

const MODES = ['council', 'vote', 'jury', 'debate', 'delphi'] as const;
const TABLES = CONVERSATION_TABLES;
type TableName = ConversationTable;
const LABEL: Record<TableName, string> = {
  conversations: 'conversations',
  messages: 'messages',
  deliberation_stages: 'stage rows',
  model_calls: 'model calls',
  deliberation_events: 'events',
};
const RETENTION_DAYS = 30;
/** Retention must keep up with the throughput target (100 deliberations/s) using ≤ 10 % of an hourly run. */
const RATE_TARGET_PER_S = 1000;
const LONGEST_CHUNK_TARGET_MS = 1000;
const MB = 1024 * 1024;

/** Bytes on disk of each table, its indexes and TOAST included, partitions summed. */
async function tableBytes(q: {
  query(sql: string, p?: unknown[]): Promise<unknown>;
}): Promise<Record<TableName, number>> {
  const rows = (await q.query(
    // pg_partition_tree lists nothing for a plain table: its own size then.
    `SELECT t AS name, (CASE WHEN c.relkind = 'p'
         THEN (SELECT COALESCE(sum(pg_total_relation_size(relid)), 0) FROM pg_partition_tree(c.oid) WHERE isleaf)
         ELSE pg_total_relation_size(c.oid) END)::float8 AS bytes
     FROM unnest($1::text[]) AS t JOIN pg_class c ON c.oid = t::regclass`,
    [TABLES],
  )) as { name: TableName; bytes: number }[];
  return Object.fromEntries(rows.map((r) => [r.name, r.bytes])) as Record<TableName, number>;
}

async function tableRows(q: {
  query(sql: string, p?: unknown[]): Promise<unknown>;
}): Promise<Record<TableName, number>> {
  const [row] = (await q.query(
    `SELECT ${TABLES.map((t) => `(SELECT count(*) FROM ${t})::float8 AS ${t}`).join(', ')}`,
  )) as Record<TableName, number>[];
  return row;
}

async function columnsOf(q: QueryRunner, table: string): Promise<string[]> {
  const rows: { column_name: string }[] = await q.query(
    `SELECT column_name FROM information_schema.columns WHERE table_schema = 'public' AND table_name = $1
     ORDER BY ordinal_position`,
    [table],
  );
  return rows.map((r) => r.column_name);
}

/**
 * INSERT INTO table SELECT every column of the template row `x` (found by `from`), some replaced
 * by expressions; returns the rows written. New columns other issues add are copied as they are.
 */
async function copyRows(
  q: QueryRunner,
  table: string,
  from: string,
  overrides: Record<string, string>,
): Promise<number> {
  const columns = await columnsOf(q, table);
  for (const name of Object.keys(overrides)) {
    if (!columns.includes(name)) throw new HarnessError(`${table} has no column ${name}`);
  }
  const quoted = columns.map((c) => `"${c}"`);
  const select = columns.map((c) => overrides[c] ?? `x."${c}"`).join(', ');
  const [{ n }]: { n: number }[] = await q.query(
    `WITH copied AS (INSERT INTO ${table} (${quoted.join(', ')}) SELECT ${select} FROM ${from} RETURNING 1)
     SELECT count(*)::int AS n FROM copied`,
  );
  return n;
}

/**
 * `total` old deliberations written with SQL (generate_series over the templates: each a copy of
 * one measured deliberation, all of its rows, with new ids), last active `firstAt` … `firstAt` +
 * `spanMs`, in the weekly event partitions of those weeks (made first, as the job would have).
 */
export async function insertOld(
  q: QueryRunner,
  templates: string[],
  total: number,
  firstAt: Date,
  spanMs: number,
): Promise<Record<TableName, number>> {
  const weeks = [];
  for (let t = firstAt.getTime(); t <= firstAt.getTime() + spanMs + WEEK_MS; t += WEEK_MS)
    weeks.push(weekPartition(new Date(t)));
  await q.startTransaction();
  await ensureEventPartitions(q, weeks);
  await q.commitTransaction();
  // Foreign-key checks off for the copy (a superuser's session setting); the rows copied are consistent.
  const fast = await q.query('SET session_replication_role = replica').then(
    () => true,
    () => false,
  );
  await q.query('DROP TABLE IF EXISTS bench_tpl, bench_old');
  await q.query(
    `CREATE TEMP TABLE bench_tpl AS
     SELECT (row_number() OVER (ORDER BY a.id) - 1)::int AS k, a.conversation_id AS conv, u.id AS umsg, a.id AS amsg
     FROM messages a JOIN messages u ON u.conversation_id = a.conversation_id AND u.role = 'user' AND u.turn = a.turn
     WHERE a.id = ANY($1::uuid[])`,
    [templates],
  );
  await q.query(
    `CREATE TEMP TABLE bench_old AS
     SELECT i, (i % $2::int) AS k, gen_random_uuid() AS conv, gen_random_uuid() AS umsg, gen_random_uuid() AS amsg,
       $3::timestamptz + (i::float8 / $1::int) * ($4::float8 * interval '1 millisecond') AS at
     FROM generate_series(0, $1::int - 1) AS i`,
    [total, templates.length, firstAt, spanMs],
  );
  await q.query('CREATE INDEX ON bench_old (k)');
  await q.query('ANALYZE bench_tpl');
  await q.query('ANALYZE bench_old');
  const join = (table: string, key: string) =>
    `bench_old b JOIN bench_tpl t ON t.k = b.k JOIN ${table} x ON x.${key}`;
  const rows = {} as Record<TableName, number>;
  rows.conversations = await copyRows(q, 'conversations', join('conversations', 'id = t.conv'), {
    id: 'b.conv',
    created_at: 'b.at',
    updated_at: 'b.at',
  });
  const message = { created_at: 'b.at', updated_at: 'b.at', conversation_id: 'b.conv' };
  rows.messages =
    (await copyRows(q, 'messages', join('messages', 'id = t.umsg'), { ...message, id: 'b.umsg' })) +
    (await copyRows(q, 'messages', join('messages', 'id = t.amsg'), {
      ...message,
      id: 'b.amsg',
      completed_at: 'b.at',
    }));
  rows.deliberation_stages = await copyRows(
    q,
    'deliberation_stages',
    join('deliberation_stages', 'message_id = t.amsg'),
    {
      id: 'gen_random_uuid()',
      message_id: 'b.amsg',
      created_at: 'b.at',
    },
  );
  rows.model_calls = await copyRows(q, 'model_calls', join('model_calls', 'message_id = t.amsg'), {
    id: 'gen_random_uuid()',
    message_id: 'b.amsg',
    created_at: 'b.at',
  });
  rows.deliberation_events = await copyRows(
    q,
    'deliberation_events',
    join('deliberation_events', 'message_id = t.amsg'),
    {
      message_id: 'b.amsg',
      message_created_at: 'b.at',
      created_at: 'b.at',
    },
  );
  if (fast) await q.query('SET session_replication_role = origin');
  await q.query('DROP TABLE bench_tpl, bench_old');
  return rows;
}

const perUnit = (bytes: number, n: number) => Math.round(bytes / n);
const mb = (bytes: number) => round(bytes / MB, 1);

export const lifecycle: Scenario = {
  name: 'lifecycle',
  title: 'Storage per deliberation and retention',
  target: `bytes per deliberation by table for each mode (reported); retention of 100 000 old deliberations at ≥ ${RATE_TARGET_PER_S}/s (≤ 100 s) with no transaction over ${LONGEST_CHUNK_TARGET_MS} ms, the events table back to its size`,
  async run(ctx) {
    const perMode = ctx.quick ? 10 : 200;
    const old = ctx.quick ? 3_000 : 100_000;
    const stack = await new BenchStack(ctx, { SIM_LATENCY_MS: '0', WORKER_CONCURRENCY: '32' }).init();
    const cpu: Record<string, CpuReport> = {};
    const connection = new IORedis(stack.test.config.redisUrl, { maxRetriesPerRequest: null });
    const queue = new Queue('data-lifecycle', { connection, prefix: stack.test.config.queuePrefix });
    const runner = stack.db.createQueryRunner();
    try {
      await stack.spawnGateway();
      const writer = await stack.spawnWorker();
      await runner.connect();

      // 1. Bytes per deliberation: N new deliberations of each mode, the tables' growth ÷ N.
      const bytesPerMode: Record<string, Record<TableName | 'total', number>> = {};
      const rowsPerMode: Record<string, Record<TableName, number>> = {};
      const templates: string[] = [];
      for (const mode of MODES) {
        const bytes0 = await tableBytes(stack.db);
        const rows0 = await tableRows(stack.db);
        const started = await mapLimit(
          Array.from({ length: perMode }, (_, i) => i),
          32,
          (i) => startDeliberation(stack.baseUrl, requestFor(mode, 10_000 + i)),
        );
        const ids = started.map((s) => s.messageId);
        const deadline = Date.now() + 300_000;
        for (;;) {
          const [{ done, complete }]: { done: number; complete: number }[] = await stack.db.query(
            `SELECT count(*) FILTER (WHERE status IN ('complete', 'failed', 'cancelled'))::int AS done,
               count(*) FILTER (WHERE status = 'complete')::int AS complete
             FROM messages WHERE id = ANY($1::uuid[])`,
            [ids],
          );
          if (done === ids.length) {
            if (complete !== ids.length)
              throw new HarnessError(`${mode}: ${ids.length - complete} deliberations did not complete`);
            break;
          }
          if (Date.now() > deadline)
            throw new HarnessError(`${mode}: ${ids.length - done} deliberations never ended`);
          await sleep(200);
        }
        await sleep(1000); // the titles (beside stage 1) are written too
        const bytes1 = await tableBytes(stack.db);
        const rows1 = await tableRows(stack.db);
        const bytes = {} as Record<TableName | 'total', number>;
        const rows = {} as Record<TableName, number>;
        let total = 0;
        for (const t of TABLES) {
          bytes[t] = perUnit(bytes1[t] - bytes0[t], perMode);
          rows[t] = round((rows1[t] - rows0[t]) / perMode, 1);
          total += bytes[t];
        }
        bytes.total = total;
        bytesPerMode[mode] = bytes;
        rowsPerMode[mode] = rows;
        templates.push(...ids);
        ctx.log(
          `  lifecycle: ${mode}: ${total} bytes per deliberation (${bytes.deliberation_events} in events)`,
        );
      }
      await stack.stopWorker(writer);

      // 2. Old data: `old` deliberations last active 400 to 330 days ago, copies of the ones above.
      const eventsBefore = (await tableBytes(stack.db)).deliberation_events;
      const firstAt = new Date(Date.now() - 400 * 86_400_000);
      const spanMs = 70 * 86_400_000;
      const insertStarted = Date.now();
      const inserted = await insertOld(runner, templates, old, firstAt, spanMs);
      const insertS = (Date.now() - insertStarted) / 1000;
      await runner.query('VACUUM ANALYZE');
      const bytesFull = await tableBytes(stack.db);
      const partitionsFull = (await listEventPartitions(stack.db)).length;
      ctx.log(
        `  lifecycle: ${old} old deliberations written in ${round(insertS, 0)} s (${inserted.deliberation_events} events); events ${mb(bytesFull.deliberation_events)} MB in ${partitionsFull} partitions`,
      );

      // The same events in one plain table, oldest first (as years of appends lay them out), for comparison.
      await runner.query('DROP TABLE IF EXISTS bench_events_flat');
      await runner.query(
        `CREATE TABLE bench_events_flat AS SELECT message_id, seq, event_key, type, payload, created_at
         FROM deliberation_events ORDER BY message_created_at, message_id, seq`,
      );
      await runner.query('ALTER TABLE bench_events_flat ADD PRIMARY KEY (message_id, seq)');
      await runner.query('CREATE UNIQUE INDEX ON bench_events_flat (message_id, event_key)');
      await runner.query('VACUUM ANALYZE bench_events_flat');
      const flatSize = async () => {
        const [{ bytes }]: { bytes: number }[] = await runner.query(
          `SELECT pg_total_relation_size('bench_events_flat')::float8 AS bytes`,
        );
        return bytes;
      };
      const flatFull = await flatSize();

      // 3. Retention: a worker with RETENTION_DAYS runs the data-lifecycle job once, at its start.
      await queue.removeJobScheduler('data-lifecycle');
      await queue.obliterate({ force: true });
      const from = ctx.sampler.cpu();
      const retentionStarted = Date.now();
      await stack.spawnWorker({ RETENTION_DAYS: String(RETENTION_DAYS) });
      let summary: LifecycleRunSummary | null = null;
      const deadline = Date.now() + 900_000;
      while (!summary) {
        const jobs: Job<unknown, LifecycleRunSummary>[] = await queue.getJobs(['completed', 'failed'], 0, -1);
        const failed = jobs.find((j) => j.failedReason);
        if (failed) throw new HarnessError(`the retention run failed: ${failed.failedReason}`);
        summary = jobs.map((j) => j.returnvalue).find((r) => r?.cutoff) ?? null;
        if (Date.now() > deadline) throw new HarnessError('the retention run did not finish in 15 minutes');
        if (!summary) await sleep(250);
      }
      cpu.retention = ProcSampler.report(from, ctx.sampler.cpu(), cpus().length);
      const wallS = (Date.now() - retentionStarted) / 1000;
      const runS = summary.durationMs / 1000;
      const ratePerS = Math.round(summary.removed.conversations / runS);
      const bytesAfter = await tableBytes(stack.db);
      const partitionsAfter = (await listEventPartitions(stack.db)).length;
      const rowsAfter = await tableRows(stack.db);
      const [{ recent }]: { recent: number }[] = await stack.db.query(
        `SELECT count(*)::int AS recent FROM messages WHERE id = ANY($1::uuid[]) AND status = 'complete'`,
        [templates],
      );
      if (summary.removed.conversations !== old || recent !== templates.length) {
        throw new HarnessError(
          `retention removed ${summary.removed.conversations} of ${old} old conversations and kept ${recent} of ${templates.length} recent deliberations`,
        );
      }
      ctx.log(
        `  lifecycle: retention removed ${old} deliberations in ${round(runS, 1)} s (${ratePerS}/s), ${summary.chunks} transactions, longest ${summary.longestChunkMs} ms; events ${mb(bytesFull.deliberation_events)} → ${mb(bytesAfter.deliberation_events)} MB`,
      );

      // 4. The plain table: the same rows deleted, then VACUUM, then VACUUM FULL (which locks it throughout).
      const deleteStarted = Date.now();
      await runner.query(
        'DELETE FROM bench_events_flat f WHERE NOT EXISTS (SELECT 1 FROM messages m WHERE m.id = f.message_id)',
      );
      const flatDeleteS = (Date.now() - deleteStarted) / 1000;
      const flatAfterDelete = await flatSize();
      const vacuumStarted = Date.now();
      await runner.query('VACUUM bench_events_flat');
      const flatVacuumS = (Date.now() - vacuumStarted) / 1000;
      const flatAfterVacuum = await flatSize();
      const fullStarted = Date.now();
      await runner.query('VACUUM FULL bench_events_flat');
      const flatFullS = (Date.now() - fullStarted) / 1000;
      const flatAfterFull = await flatSize();
      await runner.query('DROP TABLE bench_events_flat');

      const backToSize = bytesAfter.deliberation_events <= eventsBefore * 1.1 + MB;
      const checks: Check[] = [
        {
          what: `retention of ${old} old deliberations (one job run)`,
          target: `≥ ${RATE_TARGET_PER_S}/s`,
          value: `${ratePerS}/s (${round(runS, 1)} s)`,
          met: ratePerS >= RATE_TARGET_PER_S,
        },
        {
          what: 'longest retention transaction',
          target: `≤ ${LONGEST_CHUNK_TARGET_MS} ms`,
          value: `${summary.longestChunkMs} ms (${summary.chunks} transactions)`,
          met: summary.longestChunkMs <= LONGEST_CHUNK_TARGET_MS,
        },
        {
          what: 'events table after retention',
          target: 'back to its size before the old data (+10 %)',
          value: `${mb(bytesAfter.deliberation_events)} MB (before the old data ${mb(eventsBefore)} MB, with it ${mb(bytesFull.deliberation_events)} MB)`,
          met: backToSize,
        },
      ];
      const limits: string[] = [];
      if (!checks[0].met || !checks[1].met) {
        limits.push(
          `Retention deletes row by row (each chunk: its conversations' events, stage rows, model calls, messages, conversations, with the foreign keys' cascade checks); CPU during the run: ${describeCpu(cpu.retention)}. What would move it: larger chunks (RETENTION_CHUNK_SIZE), or dropping a week's event partition before deleting its rows when nothing in it can still be needed.`,
        );
      }
      const modeRows = MODES.map((mode) => [
        mode,
        ...TABLES.map((t) => bytesPerMode[mode][t]),
        `**${bytesPerMode[mode].total}**`,
        ...TABLES.map((t) => rowsPerMode[mode][t]),
      ]);
      return {
        name: 'lifecycle',
        title: this.title,
        target: this.target,
        parameters: {
          deliberationsPerMode: perMode,
          oldDeliberations: old,
          retentionDays: RETENTION_DAYS,
          chunkSize: 500,
          oldSpanDays: 70,
          latencyMs: 0,
        },
        figures: {
          bytesPerDeliberation: bytesPerMode,
          rowsPerDeliberation: rowsPerMode,
          insertOld: { seconds: round(insertS, 1), rows: inserted },
          retention: {
            runSeconds: round(runS, 2),
            wallSeconds: round(wallS, 1),
            deliberationsPerS: ratePerS,
            removed: summary.removed,
            chunks: summary.chunks,
            longestChunkMs: summary.longestChunkMs,
            partitionsDropped: summary.partitionsDropped.length,
          },
          bytes: {
            beforeOld: { deliberation_events: eventsBefore },
            withOld: bytesFull,
            afterRetention: bytesAfter,
          },
          eventPartitions: { withOld: partitionsFull, afterRetention: partitionsAfter },
          rowsAfterRetention: rowsAfter,
          plainEventsTable: {
            bytes: flatFull,
            afterDelete: flatAfterDelete,
            afterVacuum: flatAfterVacuum,
            afterVacuumFull: flatAfterFull,
            deleteSeconds: round(flatDeleteS, 1),
            vacuumSeconds: round(flatVacuumS, 1),
            vacuumFullSeconds: round(flatFullS, 1),
          },
        },
        checks,
        tables: [
          {
            caption: `Bytes per deliberation by table (pg_total_relation_size growth, indexes and TOAST included, over ${perMode} new deliberations of each mode, titles included), then rows per deliberation`,
            table: {
              columns: [
                'mode',
                ...TABLES.map((t) => `${LABEL[t]} (B)`),
                'total (B)',
                ...TABLES.map((t) => `${LABEL[t]} (rows)`),
              ],
              rows: modeRows,
            },
          },
          {
            caption: `Retention of ${old} old deliberations (RETENTION_DAYS=${RETENTION_DAYS}, chunks of 500 conversations)`,
            table: {
              columns: ['', 'value'],
              rows: [
                ['job run (its own timing)', `${round(runS, 1)} s → ${ratePerS} deliberations/s`],
                ['transactions, longest', `${summary.chunks}, ${summary.longestChunkMs} ms`],
                [
                  'rows deleted',
                  `${summary.removed.conversations} conversations, ${summary.removed.messages} messages, ${summary.removed.stage_rows} stage rows, ${summary.removed.model_calls} model calls, ${summary.removed.events} events`,
                ],
                [
                  'event partitions',
                  `${partitionsFull} → ${partitionsAfter} (${summary.partitionsDropped.length} dropped)`,
                ],
                ['CPU during the run', describeCpu(cpu.retention)],
              ],
            },
          },
          {
            caption:
              'Size on disk (MB, indexes and TOAST included): the partitioned events table against the same rows in one plain table',
            table: {
              columns: [
                '',
                'before the old data',
                'with the old data',
                'after deleting it',
                'after VACUUM',
                'after VACUUM FULL',
              ],
              rows: [
                [
                  'events, partitioned by week (retention drops the emptied weeks)',
                  mb(eventsBefore),
                  mb(bytesFull.deliberation_events),
                  `**${mb(bytesAfter.deliberation_events)}**`,
                  '—',
                  '—',
                ],
                [
                  `same events, one plain table (DELETE ${round(flatDeleteS, 1)} s, VACUUM ${round(flatVacuumS, 1)} s, VACUUM FULL ${round(flatFullS, 1)} s under an exclusive lock)`,
                  '—',
                  mb(flatFull),
                  mb(flatAfterDelete),
                  mb(flatAfterVacuum),
                  mb(flatAfterFull),
                ],
                ...(['conversations', 'messages', 'deliberation_stages', 'model_calls'] as const).map((t) => [
                  `${LABEL[t]} (not partitioned; the space is reused by new rows)`,
                  '—',
                  mb(bytesFull[t]),
                  mb(bytesAfter[t]),
                  '—',
                  '—',
                ]),
              ],
            },
          },
        ],
        method: [
          `Bytes per deliberation: for each mode, ${perMode} new deliberations (the overhead scenario's requests, simulated models at 0 ms, titles generated) through one gateway and one worker; the figure is the growth of pg_total_relation_size (heap, indexes, TOAST; the events' partitions summed) ÷ ${perMode}. Sizes grow by 8 kB pages, so small tables' figures are coarse.`,
          `Old data: ${old} deliberations written with SQL (generate_series over those ${perMode * MODES.length} deliberations as templates: each copy has every row of its template — conversation, both messages, stage rows, model calls, events — with new ids), last active 400 to 330 days ago, their events in the weekly partitions of those weeks (created first, as the job would have); foreign-key checks are off for that copy only. Then VACUUM ANALYZE.`,
          `Retention: the gateway's worker is stopped, the data-lifecycle schedule removed, and a worker with RETENTION_DAYS=${RETENTION_DAYS} started: its job runs once at start. The time is the job's own (its return value: durationMs), from the first statement to the last partition dropped.`,
          'Comparison: before retention, the same events are copied into one plain table (oldest first, the primary key and unique index the table had before partitioning); after retention the same rows are deleted from it, then VACUUM and VACUUM FULL are run on it, each timed.',
        ],
        limits,
        notes: [
          'Retention deletes whole conversations in transactions of at most 500 (RETENTION_CHUNK_SIZE), each taking row locks on its own rows only (SKIP LOCKED): the longest transaction above is the longest any row of live data could have waited behind it — none of it is live.',
          "A week's event partition is dropped (DROP TABLE, an instant's lock on the events table) once no message of that week is left; the space goes back to the file system at once. A plain table keeps its size after DELETE and VACUUM (the space is only reusable); VACUUM FULL returns it but locks the table for its whole duration.",
        ],
        evidence: { cpu },
      };
    } finally {
      await runner.release().catch(() => undefined);
      await queue.close().catch(() => undefined);
      connection.disconnect();
      await stack.stop();
    }
  },
};
