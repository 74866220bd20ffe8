import type { DataSource } from 'typeorm';
import { http } from './client';
import { round } from './stats';

/** The jury: three jurors and a foreman, all simulated. */
export const JURY_DEFAULTS = {
  mode: 'jury',
  modeConfig: { jurorModels: ['sim/j1', 'sim/j2', 'sim/j3'], foremanModel: 'sim/foreman' },
};

export function juryItems(count: number, tag: string): Record<string, unknown>[] {
  return Array.from({ length: count }, (_, i) => ({
    question: `${tag} item ${i}: is this a fair summary of why the sky is blue?`,
    modeConfig: {
      content: `Summary ${i} (${tag}): sunlight scatters off air molecules, and blue light scatters the most.`,
    },
  }));
}

export async function submitBatch(
  baseUrl: string,
  items: Record<string, unknown>[],
  options: { concurrency: number; name: string; generateTitles?: boolean },
): Promise<{ batchId: string; acceptedAt: number; ms: number; total: number }> {
  const answer = await http<{ batchId: string; total: number }>(baseUrl, 'POST', '/api/batches', {
    name: options.name,
    defaults: JURY_DEFAULTS,
    items,
    concurrency: options.concurrency,
    generateTitles: options.generateTitles ?? false,
  });
  if (answer.status !== 202) {
    throw new Error(
      `POST /api/batches: expected 202, got ${answer.status} ${JSON.stringify(answer.body).slice(0, 500)}`,
    );
  }
  return { batchId: answer.body.batchId, total: answer.body.total, acceptedAt: answer.at, ms: answer.ms };
}

export async function cancelBatch(baseUrl: string, batchId: string): Promise<void> {
  await http(baseUrl, 'POST', `/api/batches/${batchId}/cancel`).catch(() => undefined);
}

export interface Completion {
  total: number;
  statuses: Record<string, number>;
  /** Items ended ÷ (last completed_at − first batch's created_at), from PostgreSQL. */
  pgRatePerS: number;
  firstEndedAt: number | null;
  lastEndedAt: number | null;
  createdAt: number;
  titleCalls: number;
}

/** What PostgreSQL holds about the items of some batches. */
export async function completionOf(db: DataSource, batchIds: string[]): Promise<Completion> {
  const rows: { status: string; done: number | null }[] = await db.query(
    `SELECT status, (EXTRACT(EPOCH FROM completed_at) * 1000)::float AS done
     FROM messages WHERE batch_id = ANY($1) AND role = 'assistant'`,
    [batchIds],
  );
  const [{ created }]: { created: number }[] = await db.query(
    `SELECT (EXTRACT(EPOCH FROM min(created_at)) * 1000)::float AS created FROM batches WHERE id = ANY($1)`,
    [batchIds],
  );
  const [{ titles }]: { titles: number }[] = await db.query(
    `SELECT count(*)::int AS titles FROM model_calls c JOIN messages m ON m.id = c.message_id
     WHERE m.batch_id = ANY($1) AND c.stage = 'title'`,
    [batchIds],
  );
  const statuses: Record<string, number> = {};
  for (const row of rows) statuses[row.status] = (statuses[row.status] ?? 0) + 1;
  const ended = rows
    .map((r) => r.done)
    .filter((d): d is number => d !== null)
    .sort((a, b) => a - b);
  const last = ended.length > 0 ? ended[ended.length - 1] : null;
  return {
    total: rows.length,
    statuses,
    pgRatePerS: last ? round(ended.length / ((last - created) / 1000)) : Number.NaN,
    firstEndedAt: ended[0] ?? null,
    lastEndedAt: last,
    createdAt: created,
    titleCalls: titles,
  };
}

/** pg_stat_statements (private servers only) and transaction counts of one database. */
export class DbActivity {
  private commitsBefore = 0;
  private statements = false;

  constructor(private readonly db: DataSource) {}

  async reset(): Promise<void> {
    try {
      await this.db.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
      await this.db.query('SELECT pg_stat_statements_reset()');
      this.statements = true;
    } catch {
      this.statements = false;
    }
    this.commitsBefore = await this.commits();
  }

  private async commits(): Promise<number> {
    await this.db.query('SELECT pg_stat_clear_snapshot()');
    const [row]: { n: string }[] = await this.db.query(
      'SELECT xact_commit AS n FROM pg_stat_database WHERE datname = current_database()',
    );
    return Number(row.n);
  }

  /** Per deliberation: transactions committed and statements run; the busiest statements. */
  async read(deliberations: number) {
    // the counters are sent to the statistics collector asynchronously
    await new Promise((r) => setTimeout(r, 1000));
    const commits = (await this.commits()) - this.commitsBefore;
    const result: Record<string, unknown> = {
      commitsPerDeliberation: round(commits / deliberations, 1),
    };
    if (this.statements) {
      const rows: { query: string; calls: string; ms: number }[] = await this.db.query(
        `SELECT query, calls, total_exec_time::float AS ms FROM pg_stat_statements
         WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) ORDER BY calls DESC`,
      );
      const calls = rows.reduce((n, r) => n + Number(r.calls), 0);
      const ms = rows.reduce((n, r) => n + r.ms, 0);
      result.statementsPerDeliberation = round(calls / deliberations, 1);
      result.statementExecMsPerDeliberation = round(ms / deliberations, 2);
      result.topStatements = rows.slice(0, 12).map((r) => ({
        perDeliberation: round(Number(r.calls) / deliberations, 2),
        totalMs: round(r.ms, 0),
        query: r.query.replace(/\s+/g, ' ').slice(0, 120),
      }));
    }
    return result;
  }
}
