import type {
  MessageStatus,
  ModeName,
  ReportCallAggregate,
  ReportFailureRow,
  ReportAttemptRow,
  ReportCallRow,
  ReportItem,
  ReportStageCalls,
  ReportStageRow,
  ReportUsageAggregate,
} from '@conclave/contracts';
import type { DataSource } from 'typeorm';

/**
 * What batch reports and comparisons read (issue 21), and nothing more: items page by page with
 * the two report fields of their user message (`reference`, `key`), their stage rows without text,
 * and per-model / per-batch aggregates computed by PostgreSQL. Every query is one per page or one
 * per batch, never one per item. Items are each item's latest attempt (`superseded_at IS NULL`);
 * calls and cost count every attempt, since every attempt was paid for.
 */

/** Long text inside `parsed_data` that no statistic reads: dropped before it leaves the database. */
const TEXT_KEYS = [
  'reasoning',
  'recommendations',
  'keyStrengths',
  'keyWeaknesses',
  'dissentingOpinions',
  'dimensionAnalysis',
  'warnings',
  'failedJurors',
  'dimensionRanges',
  'dimensionAverages',
  'options',
];
/** Stage rows no statistic reads (the content under evaluation; council's first answers). */
const SKIPPED_STAGES = ['present', 'stage1', 'synthesis'];

/** A stage row as the report builders read it, with the item it belongs to. */
export interface ReportStageRecord extends ReportStageRow {
  messageId: string;
}

export interface ReportBatchShape {
  /** Items (latest attempts) per mode, and how many of them carry a key. */
  modes: { mode: ModeName; items: number; keyed: number }[];
  /** Up to five keys held by more than one item, with those items' indexes. */
  duplicateKeys: { key: string; indexes: number[] }[];
}

const num = (value: string | number | null): number | null => (value === null ? null : Number(value));

export class ReportsRepository {
  constructor(private readonly dataSource: DataSource) {}

  /**
   * How many item deliberations (every attempt) the batch holds: with its finished_at, what changes
   * when a finished batch's report can change (a retry adds attempts and finishes it again, deleting
   * an item's conversation removes its messages).
   */
  async itemRows(batchId: string): Promise<number> {
    const [row]: { n: number }[] = await this.dataSource.query(
      `SELECT COUNT(*)::int AS n FROM messages WHERE batch_id = $1 AND role = 'assistant'`,
      [batchId],
    );
    return row.n;
  }

  /** Up to `limit` items after `afterIndex`, in submission order. */
  async itemsPage(batchId: string, afterIndex: number, limit: number): Promise<ReportItem[]> {
    const rows: {
      id: string;
      batch_index: number;
      mode: ModeName;
      status: MessageStatus;
      reference: unknown;
      key: string | null;
      expected: unknown;
      cost: number | null;
      tokens: number | null;
      duration: string | number | null;
    }[] = await this.dataSource.query(
      // Graded items only: their latest attempt's cost, tokens and duration (panel gain per correct answer).
      `SELECT a.id, a.batch_index, a.mode, a.status, u.config->'reference' AS reference, u.config->>'key' AS key,
         u.config->'expected' AS expected, k.cost, k.tokens,
         CASE WHEN u.config ? 'expected' AND a.completed_at IS NOT NULL AND a.dispatched_at IS NOT NULL
           THEN EXTRACT(EPOCH FROM (a.completed_at - a.dispatched_at)) * 1000 END AS duration
       FROM messages a JOIN messages u ON u.conversation_id = a.conversation_id AND u.role = 'user' AND u.turn = 1
       LEFT JOIN LATERAL (
         SELECT SUM(c.cost_usd)::float8 AS cost,
           SUM(COALESCE(c.prompt_tokens, 0) + COALESCE(c.completion_tokens, 0))::float8 AS tokens
         FROM model_calls c WHERE c.message_id = a.id AND u.config ? 'expected') k ON true
       WHERE a.batch_id = $1 AND a.role = 'assistant' AND a.superseded_at IS NULL AND a.batch_index > $2
       ORDER BY a.batch_index LIMIT $3`,
      [batchId, afterIndex, limit],
    );
    return rows.map((r) => ({
      index: r.batch_index,
      messageId: r.id,
      mode: r.mode,
      status: r.status,
      reference: typeof r.reference === 'string' || typeof r.reference === 'number' ? r.reference : null,
      key: r.key,
      expected: typeof r.expected === 'string' || typeof r.expected === 'number' ? r.expected : null,
      ...(r.expected === null || r.expected === undefined
        ? {}
        : { costUsd: num(r.cost), tokens: num(r.tokens), durationMs: num(r.duration) }),
    }));
  }

  /**
   * The stage rows of these messages, without content and without the long text of `parsed_data`:
   * one result row per message holding its rows as a JSON array `[stage_type, model, participant,
   * data]`, so the driver parses one value per item instead of building an object per stage row.
   */
  async stageRows(messageIds: string[]): Promise<Map<string, ReportStageRecord[]>> {
    const byMessage = new Map<string, ReportStageRecord[]>();
    if (messageIds.length === 0) return byMessage;
    const rows: {
      message_id: string;
      rows: [string, string | null, number | null, Record<string, unknown> | null][];
    }[] = await this.dataSource.query(
      `SELECT message_id, json_agg(json_build_array(stage_type, model, participant, parsed_data - $2::text[])) AS rows
       FROM deliberation_stages WHERE message_id = ANY($1::uuid[])
         AND (stage_type <> ALL($3::text[]) OR parsed_data ? 'grade')
       GROUP BY message_id`,
      [messageIds, TEXT_KEYS, SKIPPED_STAGES],
    );
    for (const r of rows) {
      byMessage.set(
        r.message_id,
        r.rows.map(([stageType, model, participant, data]) => ({
          messageId: r.message_id,
          stageType,
          model,
          participant,
          data,
        })),
      );
    }
    return byMessage;
  }

  /**
   * Per model: calls, failures, tokens, cost, latency quantiles of successful calls (finished items,
   * every attempt), and its calls per item in compact form (how many items had so many calls and
   * failures: a few rows per model whatever the batch's size) for the failed-call share's
   * item-cluster interval.
   */
  async modelCalls(batchId: string): Promise<ReportCallAggregate[]> {
    const perItem: { model: string; calls: number; failed: number; items: number }[] =
      await this.dataSource.query(
        `SELECT model, calls, failed, COUNT(*)::int AS items FROM (
           SELECT c.model, a.batch_index, COUNT(*)::int AS calls, COUNT(*) FILTER (WHERE NOT c.ok)::int AS failed
           FROM messages a JOIN model_calls c ON c.message_id = a.id
           WHERE a.batch_id = $1 AND a.role = 'assistant' AND a.status = ANY(conclave_terminal_statuses())
           GROUP BY c.model, a.batch_index) per_item
         GROUP BY model, calls, failed ORDER BY model, calls, failed`,
        [batchId],
      );
    const byModel = new Map<string, { calls: number; failed: number; items: number }[]>();
    for (const r of perItem) {
      const list = byModel.get(r.model) ?? [];
      list.push({ calls: r.calls, failed: r.failed, items: r.items });
      byModel.set(r.model, list);
    }
    const rows: {
      model: string;
      calls: number;
      failed: number;
      prompt: number;
      completion: number;
      cost: number;
      ok_calls: number;
      p50: number | null;
      p95: number | null;
    }[] = await this.dataSource.query(
      `SELECT c.model, COUNT(*)::int AS calls, COUNT(*) FILTER (WHERE NOT c.ok)::int AS failed,
         COALESCE(SUM(c.prompt_tokens), 0)::float8 AS prompt, COALESCE(SUM(c.completion_tokens), 0)::float8 AS completion,
         COALESCE(SUM(c.cost_usd), 0)::float8 AS cost, COUNT(*) FILTER (WHERE c.ok)::int AS ok_calls,
         percentile_cont(0.5) WITHIN GROUP (ORDER BY c.response_time_ms) FILTER (WHERE c.ok) AS p50,
         percentile_cont(0.95) WITHIN GROUP (ORDER BY c.response_time_ms) FILTER (WHERE c.ok) AS p95
       FROM messages a JOIN model_calls c ON c.message_id = a.id
       WHERE a.batch_id = $1 AND a.role = 'assistant' AND a.status = ANY(conclave_terminal_statuses())
       GROUP BY c.model ORDER BY c.model`,
      [batchId],
    );
    return rows.map((r) => ({
      model: r.model,
      calls: r.calls,
      failed: r.failed,
      promptTokens: Number(r.prompt),
      completionTokens: Number(r.completion),
      costUsd: Number(r.cost),
      okCalls: r.ok_calls,
      latencyP50: num(r.p50),
      latencyP95: num(r.p95),
      perItem: byModel.get(r.model) ?? [],
    }));
  }

  /** Calls per mode, stage and model of the finished items' latest attempts (e.g. council's chairman). */
  async stageCalls(batchId: string): Promise<ReportStageCalls[]> {
    const rows: { mode: ModeName; stage: string; model: string; calls: number; failed: number }[] =
      await this.dataSource.query(
        `SELECT a.mode, c.stage, c.model, COUNT(*)::int AS calls, COUNT(*) FILTER (WHERE NOT c.ok)::int AS failed
         FROM messages a JOIN model_calls c ON c.message_id = a.id
         WHERE a.batch_id = $1 AND a.role = 'assistant' AND a.superseded_at IS NULL AND a.status = ANY(conclave_terminal_statuses())
         GROUP BY a.mode, c.stage, c.model ORDER BY a.mode, c.stage, c.model`,
        [batchId],
      );
    return rows;
  }

  /**
   * Batch-wide usage: totals over every attempt's calls; per item cost and duration (dispatch to
   * completion) over the latest attempts that ran (complete or failed); call latency of successful calls.
   */
  async usage(batchId: string): Promise<ReportUsageAggregate> {
    const [items]: {
      items: number;
      prompt: number;
      completion: number;
      cost: number;
      cost_mean: number | null;
      cost_p50: number | null;
      cost_p95: number | null;
      duration_items: number;
      duration_p50: number | null;
      duration_p95: number | null;
    }[] = await this.dataSource.query(
      `WITH per_item AS (
         SELECT a.id, a.superseded_at IS NULL AND a.status IN ('complete', 'failed') AS ran,
           CASE WHEN a.status IN ('complete', 'failed') AND a.dispatched_at IS NOT NULL AND a.completed_at IS NOT NULL
             THEN EXTRACT(EPOCH FROM (a.completed_at - a.dispatched_at)) * 1000 END AS duration,
           COALESCE(SUM(c.cost_usd), 0)::float8 AS cost,
           COALESCE(SUM(c.prompt_tokens), 0)::float8 AS prompt, COALESCE(SUM(c.completion_tokens), 0)::float8 AS completion
         FROM messages a LEFT JOIN model_calls c ON c.message_id = a.id
         WHERE a.batch_id = $1 AND a.role = 'assistant' AND a.status = ANY(conclave_terminal_statuses())
         GROUP BY a.id)
       SELECT COUNT(*) FILTER (WHERE ran)::int AS items,
         COALESCE(SUM(prompt), 0)::float8 AS prompt, COALESCE(SUM(completion), 0)::float8 AS completion,
         COALESCE(SUM(cost), 0)::float8 AS cost,
         AVG(cost) FILTER (WHERE ran) AS cost_mean,
         percentile_cont(0.5) WITHIN GROUP (ORDER BY cost) FILTER (WHERE ran) AS cost_p50,
         percentile_cont(0.95) WITHIN GROUP (ORDER BY cost) FILTER (WHERE ran) AS cost_p95,
         COUNT(duration) FILTER (WHERE ran)::int AS duration_items,
         percentile_cont(0.5) WITHIN GROUP (ORDER BY duration) FILTER (WHERE ran AND duration IS NOT NULL) AS duration_p50,
         percentile_cont(0.95) WITHIN GROUP (ORDER BY duration) FILTER (WHERE ran AND duration IS NOT NULL) AS duration_p95
       FROM per_item`,
      [batchId],
    );
    const [latency]: { n: number; p50: number | null; p95: number | null }[] = await this.dataSource.query(
      `SELECT COUNT(*)::int AS n,
         percentile_cont(0.5) WITHIN GROUP (ORDER BY c.response_time_ms) AS p50,
         percentile_cont(0.95) WITHIN GROUP (ORDER BY c.response_time_ms) AS p95
       FROM messages a JOIN model_calls c ON c.message_id = a.id
       WHERE a.batch_id = $1 AND a.role = 'assistant' AND a.status = ANY(conclave_terminal_statuses()) AND c.ok`,
      [batchId],
    );
    return {
      items: items.items,
      promptTokens: Number(items.prompt),
      completionTokens: Number(items.completion),
      costUsd: Number(items.cost),
      costMean: num(items.cost_mean),
      costP50: num(items.cost_p50),
      costP95: num(items.cost_p95),
      durationItems: items.duration_items,
      durationP50: num(items.duration_p50),
      durationP95: num(items.duration_p95),
      okCalls: latency.n,
      latencyP50: num(latency.p50),
      latencyP95: num(latency.p95),
    };
  }

  /** Failed items (latest attempts) grouped by error text, most frequent first: the first `limit` groups. */
  async failureGroups(batchId: string, limit: number): Promise<ReportFailureRow[]> {
    const rows: {
      error: string;
      n: number;
      indexes: number[];
      ids: string[];
      keys: (string | null)[];
    }[] = await this.dataSource.query(
      `SELECT COALESCE(NULLIF(a.error, ''), '(no error recorded)') AS error, COUNT(*)::int AS n,
         (array_agg(a.batch_index ORDER BY a.batch_index))[1:5] AS indexes,
         (array_agg(a.id::text ORDER BY a.batch_index))[1:5] AS ids,
         (array_agg(u.config->>'key' ORDER BY a.batch_index))[1:5] AS keys
       FROM messages a JOIN messages u ON u.conversation_id = a.conversation_id AND u.role = 'user' AND u.turn = 1
       WHERE a.batch_id = $1 AND a.role = 'assistant' AND a.superseded_at IS NULL AND a.status = 'failed'
       GROUP BY 1 ORDER BY n DESC, MIN(a.batch_index) LIMIT $2`,
      [batchId, limit],
    );
    return rows.map((r) => ({
      error: r.error,
      count: r.n,
      examples: r.indexes.map((index, i) => ({ index, messageId: r.ids[i], key: r.keys[i] ?? null })),
    }));
  }

  /**
   * Every attempt (latest and superseded, any status) of the items with batch index in
   * [fromIndex, toIndex], by index then attempt: the long-format export's item rows. Duration is
   * measured as `usage` measures it.
   */
  async attemptsOf(batchId: string, fromIndex: number, toIndex: number): Promise<ReportAttemptRow[]> {
    const rows: {
      id: string;
      batch_index: number;
      attempt: number;
      latest: boolean;
      mode: ModeName;
      status: MessageStatus;
      error: string | null;
      dispatched_at: Date | null;
      completed_at: Date | null;
      duration: string | number | null;
    }[] = await this.dataSource.query(
      `SELECT a.id, a.batch_index, a.attempt, a.superseded_at IS NULL AS latest, a.mode, a.status, a.error,
         a.dispatched_at, a.completed_at,
         CASE WHEN a.status IN ('complete', 'failed') AND a.dispatched_at IS NOT NULL AND a.completed_at IS NOT NULL
           THEN EXTRACT(EPOCH FROM (a.completed_at - a.dispatched_at)) * 1000 END AS duration
       FROM messages a
       WHERE a.batch_id = $1 AND a.role = 'assistant' AND a.batch_index BETWEEN $2 AND $3
       ORDER BY a.batch_index, a.attempt`,
      [batchId, fromIndex, toIndex],
    );
    const iso = (d: Date | null) => (d === null ? null : new Date(d).toISOString());
    return rows.map((r) => ({
      index: r.batch_index,
      messageId: r.id,
      attempt: r.attempt,
      latest: r.latest,
      mode: r.mode,
      status: r.status,
      error: r.error,
      dispatchedAt: iso(r.dispatched_at),
      completedAt: iso(r.completed_at),
      durationMs: num(r.duration === null ? null : Number(r.duration)),
    }));
  }

  /** The model calls of these messages without their text, in the order they were written. */
  async callsOf(messageIds: string[]): Promise<Map<string, ReportCallRow[]>> {
    const byMessage = new Map<string, ReportCallRow[]>();
    if (messageIds.length === 0) return byMessage;
    const rows: {
      message_id: string;
      stage: string;
      call_key: string;
      model: string;
      ok: boolean;
      prompt_tokens: number | null;
      completion_tokens: number | null;
      cost: number | null;
      response_time_ms: number;
      created_at: Date;
    }[] = await this.dataSource.query(
      `SELECT c.message_id, c.stage, c.call_key, c.model, c.ok, c.prompt_tokens, c.completion_tokens,
         c.cost_usd::float8 AS cost, c.response_time_ms, c.created_at
       FROM model_calls c WHERE c.message_id = ANY($1::uuid[])
       ORDER BY c.message_id, c.created_at, c.stage, c.call_key`,
      [messageIds],
    );
    for (const r of rows) {
      const list = byMessage.get(r.message_id) ?? [];
      list.push({
        messageId: r.message_id,
        stage: r.stage,
        callKey: r.call_key,
        model: r.model,
        ok: r.ok,
        promptTokens: r.prompt_tokens,
        completionTokens: r.completion_tokens,
        costUsd: r.cost === null ? null : Number(r.cost),
        latencyMs: r.response_time_ms,
        finishedAt: new Date(r.created_at).toISOString(),
      });
      byMessage.set(r.message_id, list);
    }
    return byMessage;
  }

  /** What a comparison checks before it reads anything: modes, keys, duplicate keys. */
  async shape(batchId: string): Promise<ReportBatchShape> {
    const modes: { mode: ModeName; items: number; keyed: number }[] = await this.dataSource.query(
      `SELECT a.mode, COUNT(*)::int AS items, COUNT(u.config->>'key')::int AS keyed
       FROM messages a JOIN messages u ON u.conversation_id = a.conversation_id AND u.role = 'user' AND u.turn = 1
       WHERE a.batch_id = $1 AND a.role = 'assistant' AND a.superseded_at IS NULL
       GROUP BY a.mode ORDER BY a.mode`,
      [batchId],
    );
    const duplicateKeys: { key: string; indexes: number[] }[] = await this.dataSource.query(
      `SELECT u.config->>'key' AS key, array_agg(a.batch_index ORDER BY a.batch_index) AS indexes
       FROM messages a JOIN messages u ON u.conversation_id = a.conversation_id AND u.role = 'user' AND u.turn = 1
       WHERE a.batch_id = $1 AND a.role = 'assistant' AND a.superseded_at IS NULL AND u.config->>'key' IS NOT NULL
       GROUP BY 1 HAVING COUNT(*) > 1 ORDER BY MIN(a.batch_index) LIMIT 5`,
      [batchId],
    );
    return { modes, duplicateKeys };
  }
}
