import { isTerminalStatus, type DeliveredEvent, type FinishReason, type ModeName } from '@conclave/contracts';
import {
  gradingFields,
  storedGrading,
  type CallOutcome,
  type DeliberationStore,
  type HistoryTurn,
  type LoadedDeliberation,
  type MessageState,
  type StageRow,
  type StageWrite,
  type StageWriteResult,
  type UnfinishedMessage,
} from '@conclave/deliberation';
import { DatabaseError, type Pool, type QueryResultRow } from 'pg';
import { GroupedWrites, type GroupedWritesOptions } from './grouped-writes';
import type { DataSource, EntityManager } from 'typeorm';
import type { PostgresDriver } from 'typeorm/driver/postgres/PostgresDriver';

interface MessageRow {
  id: string;
  conversation_id: string;
  mode: ModeName;
  status: MessageState['status'];
  stage: string | null;
  needs_title: boolean;
  created_at: Date;
  config: unknown;
  turn: number;
  last_seq: number;
  batch_id: string | null;
}

/** A `deliberation_stages` row as PostgreSQL returns it. */
export interface StageRowRecord {
  stage_type: string;
  stage_order: number;
  model: string | null;
  role: string | null;
  content: string;
  parsed_data: Record<string, unknown> | null;
  response_time_ms: number | null;
  prompt_tokens: number | null;
  completion_tokens: number | null;
  cost_usd: string | number | null;
  participant: number | null;
}

interface ModelCallRecord {
  call_key: string;
  model: string;
  served_model: string | null;
  ok: boolean;
  content: string | null;
  error: string | null;
  response_time_ms: number;
  prompt_tokens: number | null;
  completion_tokens: number | null;
  cost_usd: string | number | null;
  simulated: boolean;
  finish_reason: string | null;
}

interface EventRecord {
  message_id: string;
  seq: number;
  type: string;
  payload: Record<string, unknown>;
  created_at: Date;
}

/** TypeORM's postgres driver answers UPDATE/DELETE ... RETURNING with [rows, affectedCount]. */
export function returnedRows<T>(result: unknown): T[] {
  if (
    Array.isArray(result) &&
    result.length === 2 &&
    Array.isArray(result[0]) &&
    typeof result[1] === 'number'
  ) {
    return result[0] as T[];
  }
  return result as T[];
}

/** An appended event as conclave_stage_write's compact answer gives it: [event_key, seq, created_at]. */
type CompactEvent = [string, number, string];

/**
 * The events a write appended, as subscribers get them: the payloads sent (the first event of each
 * key: later ones were not appended), the seq and time PostgreSQL gave them, and the title it
 * filled into `title_complete`.
 */
function delivered(
  messageId: string,
  write: StageWrite,
  appended: CompactEvent[],
  title: string | null | undefined,
): DeliveredEvent[] {
  const byKey = new Map<string, StageWrite['events'][number]>();
  for (const event of write.events) if (!byKey.has(event.key)) byKey.set(event.key, event);
  return appended.map(([key, seq, createdAt]) => {
    const event = byKey.get(key);
    if (!event) throw new Error(`conclave_stage_write appended an event that was not sent: ${key}`);
    const payload =
      event.type === 'title_complete'
        ? { ...event.payload, data: { ...(event.payload.data as object | undefined), title: title ?? null } }
        : event.payload;
    return toDeliveredEvent({
      message_id: messageId,
      seq,
      type: event.type,
      payload,
      created_at: new Date(createdAt),
    });
  });
}

/** numeric columns arrive as strings from a plain SELECT and as numbers from json_agg. */
const num = (value: string | number | null): number | null => (value === null ? null : Number(value));

export function toDeliveredEvent(record: EventRecord): DeliveredEvent {
  return {
    ...record.payload,
    type: record.type,
    messageId: record.message_id,
    seq: record.seq,
    at: new Date(record.created_at).toISOString(),
  };
}

export function toStageRow(r: StageRowRecord): StageRow {
  return {
    stageType: r.stage_type,
    stageOrder: r.stage_order,
    model: r.model,
    role: r.role,
    content: r.content,
    parsedData: r.parsed_data,
    responseTimeMs: r.response_time_ms,
    promptTokens: r.prompt_tokens,
    completionTokens: r.completion_tokens,
    costUsd: num(r.cost_usd),
    participant: r.participant,
  };
}

function toOutcome(r: ModelCallRecord): CallOutcome {
  // What a call's outcome says whether it failed or not, after `ok`.
  const call = { key: r.call_key, model: r.model, responseTimeMs: r.response_time_ms };
  if (!r.ok) return { ok: false, ...call, error: r.error ?? '' };
  return {
    ok: true,
    ...call,
    content: r.content ?? '',
    servedModel: r.served_model ?? r.model,
    promptTokens: r.prompt_tokens,
    completionTokens: r.completion_tokens,
    costUsd: num(r.cost_usd),
    simulated: r.simulated,
    ...(r.finish_reason ? { finishReason: r.finish_reason as FinishReason } : {}),
  };
}

/** A stage row's columns, in the order conclave_stage_write answers them with `loaded`. */
const STAGE_ROW_COLUMNS = [
  'stage_type',
  'stage_order',
  'model',
  'role',
  'content',
  'parsed_data',
  'response_time_ms',
  'prompt_tokens',
  'completion_tokens',
  'cost_usd',
  'participant',
] as const;

/** A model call's columns (with its stage), in the order conclave_stage_write answers them with `loaded`. */
const STORED_CALL_COLUMNS = [
  'stage',
  'call_key',
  'model',
  'served_model',
  'ok',
  'content',
  'error',
  'response_time_ms',
  'prompt_tokens',
  'completion_tokens',
  'cost_usd',
  'simulated',
  'finish_reason',
] as const;

/** A record from a compact answer's array of column values. */
function fromColumns<T>(columns: readonly string[], values: unknown[]): T {
  const record: { [column: string]: unknown } = {};
  columns.forEach((column, i) => (record[column] = values[i]));
  return record as T;
}

/** A message's model outcomes by stage, from the records a load (or a stage write's answer) reads. */
function outcomesByStage(records: (ModelCallRecord & { stage: string })[]): Record<string, CallOutcome[]> {
  const outcomes: Record<string, CallOutcome[]> = {};
  for (const record of records) (outcomes[record.stage] ??= []).push(toOutcome(record));
  return outcomes;
}

const STAGE_ROW_SELECT = `SELECT stage_type, stage_order, model, role, content, parsed_data, response_time_ms,
  prompt_tokens, completion_tokens, cost_usd, participant FROM deliberation_stages WHERE message_id = $1
  ORDER BY stage_order, participant NULLS FIRST, created_at, id`;

export async function loadStageRows(
  manager: EntityManager | DataSource,
  messageId: string,
): Promise<StageRow[]> {
  const records: StageRowRecord[] = await manager.query(STAGE_ROW_SELECT, [messageId]);
  return records.map(toStageRow);
}

const MODEL_CALL_COLUMNS = `call_key, model, served_model, ok, content, error, response_time_ms, prompt_tokens,
  completion_tokens, cost_usd, simulated, finish_reason`;

/** A model call's outcome as the columns of model_calls (for conclave_stage_write). */
function outcomeRecord(
  outcome: CallOutcome,
): Omit<ModelCallRecord, 'cost_usd'> & { cost_usd: number | null } {
  const ok = outcome.ok;
  return {
    call_key: outcome.key,
    model: outcome.model,
    served_model: ok ? outcome.servedModel : null,
    ok,
    content: ok ? outcome.content : null,
    error: ok ? null : outcome.error,
    response_time_ms: outcome.responseTimeMs,
    prompt_tokens: ok ? outcome.promptTokens : null,
    completion_tokens: ok ? outcome.completionTokens : null,
    cost_usd: ok ? outcome.costUsd : null,
    simulated: ok ? outcome.simulated : false,
    finish_reason: ok ? (outcome.finishReason ?? null) : null,
  };
}

/** A stage row as the columns of deliberation_stages. */
function stageRowRecord(row: StageRow): StageRowRecord {
  return {
    stage_type: row.stageType,
    stage_order: row.stageOrder,
    model: row.model,
    role: row.role,
    content: row.content,
    parsed_data: row.parsedData,
    response_time_ms: row.responseTimeMs,
    prompt_tokens: row.promptTokens,
    completion_tokens: row.completionTokens,
    cost_usd: row.costUsd,
    participant: row.participant ?? null,
  };
}

/**
 * The message with its question, stage rows and model outcomes in one round trip: a stage job
 * reads everything it needs at once.
 */
const LOAD_MESSAGE = `
SELECT m.id, m.conversation_id, m.mode, m.status, m.stage, m.needs_title, m.created_at, m.config, m.turn,
  m.last_seq, m.batch_id,
  u.content AS question,
  -- Issue 37: a graded turn's expected answer and grader, kept in its user message's config.
  CASE WHEN jsonb_typeof(u.config->'grader') = 'object' THEN jsonb_build_object('expected', u.config->'expected', 'grader', u.config->'grader')
  END AS grading,
  (SELECT COALESCE(json_agg(json_build_object('stage_type', s.stage_type, 'stage_order', s.stage_order,
      'model', s.model, 'role', s.role, 'content', s.content, 'parsed_data', s.parsed_data,
      'response_time_ms', s.response_time_ms, 'prompt_tokens', s.prompt_tokens,
      'completion_tokens', s.completion_tokens, 'cost_usd', s.cost_usd, 'participant', s.participant)
      ORDER BY s.stage_order, s.participant NULLS FIRST, s.created_at, s.id), '[]')
   FROM deliberation_stages s WHERE s.message_id = m.id) AS stage_rows,
  (SELECT COALESCE(json_agg(json_build_object('stage', c.stage, 'call_key', c.call_key, 'model', c.model,
      'served_model', c.served_model, 'ok', c.ok, 'content', c.content, 'error', c.error,
      'response_time_ms', c.response_time_ms, 'prompt_tokens', c.prompt_tokens,
      'completion_tokens', c.completion_tokens, 'cost_usd', c.cost_usd, 'simulated', c.simulated,
      'finish_reason', c.finish_reason)
      ORDER BY c.created_at, c.id), '[]')
   FROM model_calls c WHERE c.message_id = m.id AND c.stage <> 'unstored') AS model_calls,
  (SELECT min(e.created_at) FROM deliberation_events e
   WHERE e.message_id = m.id AND e.message_created_at = m.created_at AND e.type = 'model_progress'
     AND left(e.event_key, length('model_progress:' || m.stage || ':')) = 'model_progress:' || m.stage || ':'
  ) AS stage_opened_at
FROM messages m
LEFT JOIN LATERAL (SELECT u.content, u.config FROM messages u
  WHERE u.conversation_id = m.conversation_id AND u.turn = m.turn AND u.role = 'user' LIMIT 1) u ON true
WHERE m.id = $1 AND m.role = 'assistant'`;

export interface DeliberationStoreOptions {
  /**
   * Named prepared statements for the statements every stage runs (the default). False behind a
   * transaction-pooling PgBouncer (DATABASE_POOL_MODE=transaction): there consecutive statements
   * of one client connection may reach different server connections, and a statement prepared on
   * one is unknown on the next ("prepared statement ... does not exist" / "already exists").
   */
  preparedStatements?: boolean;
  /**
   * Stage writes of different deliberations that fall due together go as one statement and one
   * commit (GroupedWrites). Default: one group in the database at a time, up to 128 writes;
   * false writes each on its own.
   */
  groupedWrites?: GroupedWritesOptions | false;
  /** Where the store says what an operator should hear (a group of writes the database refused). */
  warn?: (message: string) => void;
}

/** One stage write as conclave_stage_write takes it: the message and its parameter, as JSON text. */
interface StageWriteCall {
  messageId: string;
  json: string;
}

export interface StageWriteAnswer {
  result: StageWriteResult['kind'];
  events?: CompactEvent[];
  title?: string | null;
  /**
   * 'replaced': the stored outcomes of the calls given; 'written' with `loaded`: STORED_CALL_COLUMNS
   * arrays (with `asSent`, `content` true for an outcome this write inserted).
   */
  outcomes?: ModelCallRecord[];
  /**
   * 'written' with `loaded`: the message's stage rows from stage order `from` on, STAGE_ROW_COLUMNS
   * arrays (with `asSent`, `content` true for a row this write inserted).
   */
  rows?: StageRowRecord[];
  from?: number | null;
}

/** A stage write as conclave_stage_write's parameter (JSON text), asking for the compact answer. */
export function stageWriteParameter(write: StageWrite): string {
  return JSON.stringify({
    stage: write.stage,
    guard: write.guard ?? false,
    markRunning: write.markRunning ?? false,
    outcomes: (write.outcomes ?? []).map(outcomeRecord),
    rows: (write.rows ?? []).map(stageRowRecord),
    events: write.events.map(({ key, type, payload }) => ({ key, type, payload })),
    ...(write.update ? { update: write.update } : {}),
    ...(write.title !== undefined ? { title: write.title } : {}),
    ...(write.conversationTitle !== undefined ? { conversationTitle: write.conversationTitle } : {}),
    ...(write.titleOutcome ? { titleOutcome: outcomeRecord(write.titleOutcome) } : {}),
    compact: true,
    ...(write.loaded ? { loaded: true, asSent: true } : {}),
  });
}

/** A stage row's write-once key (uq_deliberation_stages_once, within its message). */
const rowKey = (r: StageRowRecord): string =>
  `${r.stage_type}\u0000${r.stage_order}\u0000${r.model ?? ''}\u0000${r.role ?? ''}\u0000${r.participant ?? -1}`;

/**
 * The `content` conclave_stage_write answered `true` for (with `asSent`: a row or outcome this
 * write inserted, which stores exactly the text sent), taken from what `write` sent: a row's from
 * the first row sent with its key (the one inserted), an outcome's from the outcome sent for its
 * stage and call key.
 */
function sentContent(write: StageWrite) {
  let rows: Map<string, string> | undefined;
  return {
    row(record: StageRowRecord): string {
      if (!rows) {
        rows = new Map();
        for (const row of write.rows ?? []) {
          const sent = stageRowRecord(row);
          const key = rowKey(sent);
          if (!rows.has(key)) rows.set(key, sent.content);
        }
      }
      const content = rows.get(rowKey(record));
      if (content === undefined)
        throw new Error(`conclave_stage_write answered a row it was not sent as sent: ${record.stage_type}`);
      return content;
    },
    outcome(record: ModelCallRecord & { stage: string }): string | null {
      const sent =
        (record.stage === write.stage ? write.outcomes?.find((o) => o.key === record.call_key) : undefined) ??
        (record.stage === 'title' && write.titleOutcome?.key === record.call_key
          ? write.titleOutcome
          : undefined);
      if (!sent)
        throw new Error(
          `conclave_stage_write answered an outcome it was not sent as sent: ${record.call_key}`,
        );
      return outcomeRecord(sent).content;
    },
  };
}

/** What conclave_stage_write answered to `write` (sent as stageWriteParameter), as the engine takes it. */
export function stageWriteResult(
  messageId: string,
  write: StageWrite,
  answer: StageWriteAnswer,
): StageWriteResult {
  const { result, events, outcomes, title, rows, from } = answer;
  if (result === 'written') {
    const written = { kind: 'written' as const, events: delivered(messageId, write, events ?? [], title) };
    if (!write.loaded || !rows) return written;
    // What the database stored, as a load reads it: the next stage runs from this. A content of
    // `true` is the text this write sent (asSent).
    const sent = sentContent(write);
    const stored = {
      from: from ?? null,
      rows: (rows as unknown as unknown[][]).map((values) => {
        const record = fromColumns<StageRowRecord>(STAGE_ROW_COLUMNS, values);
        if ((record.content as unknown) === true) record.content = sent.row(record);
        return toStageRow(record);
      }),
      outcomes: outcomesByStage(
        ((outcomes ?? []) as unknown as unknown[][]).map((values) => {
          const record = fromColumns<ModelCallRecord & { stage: string }>(STORED_CALL_COLUMNS, values);
          if ((record.content as unknown) === true) record.content = sent.outcome(record);
          return record;
        }),
      ),
    };
    return { ...written, stored };
  }
  if (result === 'replaced') return { kind: 'replaced', outcomes: (outcomes ?? []).map(toOutcome) };
  return { kind: result };
}

/**
 * One group in the database at a time, up to 128 writes: in the 1 000-council burst, alternating
 * runs had the median latency fall each time the groups in flight halved (8 × 16, 4 × 32, 2 × 64,
 * 1 × 128: about 0.2–0.6 s between neighbours): fewer PostgreSQL backends competing for the cores,
 * fewer commits. A group stuck behind another writer's lock holds the rest for at most its
 * lock_timeout (1 s), then gives its place back.
 */
const DEFAULT_GROUPED_WRITES: GroupedWritesOptions = { maxInFlight: 1, maxGroup: 128 };

/**
 * The database refused the statement with an ERROR (a deadlock, a lock timeout, a bad value, a
 * constraint), so it was rolled back. Anything else (a connection that broke, a FATAL as a backend
 * is terminated) may have come after its commit.
 */
function refusedByDatabase(error: unknown): boolean {
  return error instanceof DatabaseError && error.severity === 'ERROR';
}

/** A message's stored events after a seq, and whether it has ended (or no longer exists). */
export interface StoredReplay {
  events: DeliveredEvent[];
  finished: boolean;
}

export class TypeOrmDeliberationStore implements DeliberationStore {
  private readonly named: boolean;
  private readonly grouped: GroupedWrites<StageWriteCall, StageWriteAnswer> | null;
  private readonly warn: ((message: string) => void) | undefined;
  private refusedSinceWarning = 0;
  private lastRefusalWarning = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly dataSource: DataSource,
    options: DeliberationStoreOptions = {},
  ) {
    this.named = options.preparedStatements ?? true;
    this.warn = options.warn;
    const grouping = options.groupedWrites ?? DEFAULT_GROUPED_WRITES;
    this.grouped = grouping
      ? new GroupedWrites(
          (calls: StageWriteCall[]) => this.writeGroup(calls),
          (call: StageWriteCall) => this.writeOne(call),
          { rolledBack: refusedByDatabase, onRefused: (error) => this.groupRefused(error), ...grouping },
        )
      : null;
  }

  /**
   * At most one line a minute, with the count since the last: a refused group costs its writes a
   * second round trip each, and many in a row (say the group function missing before its migration,
   * or writes waiting on a long-held lock) are worth knowing, not a line per group.
   */
  private groupRefused(error: unknown): void {
    this.refusedSinceWarning += 1;
    const now = Date.now();
    if (!this.warn || now - this.lastRefusalWarning < 60_000) return;
    const code = error instanceof DatabaseError ? error.code : undefined;
    this.warn(
      `${this.refusedSinceWarning} group(s) of stage writes refused by PostgreSQL (last: ${code ?? 'no code'}: ${
        error instanceof Error ? error.message : String(error)
      }); their writes were made one by one`,
    );
    this.refusedSinceWarning = 0;
    this.lastRefusalWarning = now;
  }

  /**
   * The statements every stage (or every subscriber) runs, as named prepared statements: each pooled connection
   * parses and plans them once instead of on every call (pg's `name`; TypeORM's query() has no way
   * to ask for it). PostgreSQL re-plans them itself after a schema change. Without them (a
   * transaction pooler) the same text goes as an unnamed statement, parsed and planned per call.
   */
  private async prepared<T>(name: string, text: string, values: unknown[]): Promise<T[]> {
    const pool = (this.dataSource.driver as PostgresDriver).master as Pool;
    const result = await pool.query<T & QueryResultRow>(
      this.named ? { name, text, values } : { text, values },
    );
    return result.rows;
  }

  /**
   * One round trip: conclave_stage_write (migrations 1763820000000, 1763830000000, 1764200000000,
   * 1764800000000, 1764900000000) decides and does the work under the row lock; it is the only writer of a stage.
   * It answers in the compact form: which of the events sent were appended, with their seq and time
   * (the payloads stay here instead of travelling back); with `loaded`, also what it stored as far
   * as it changed what the load reads (`stored`), for the next stage to run from.
   */
  async writeStage(messageId: string, write: StageWrite): Promise<StageWriteResult> {
    const call = { messageId, json: stageWriteParameter(write) };
    const answer = this.grouped ? await this.grouped.submit(messageId, call) : await this.writeOne(call);
    return stageWriteResult(messageId, write, answer);
  }

  private async writeOne({ messageId, json }: StageWriteCall): Promise<StageWriteAnswer> {
    const [row]: { result: StageWriteAnswer }[] = await this.prepared(
      'conclave_stage_write',
      'SELECT conclave_stage_write($1, $2::jsonb) AS result',
      [messageId, json],
    );
    return row.result;
  }

  /**
   * Several deliberations' writes in one statement, so one commit: conclave_stage_write_group
   * (migration 1764300000000) calls conclave_stage_write once per write, in the order given
   * (GroupedWrites sorts them by message, so groups lock in one order). Any failure fails the
   * statement, and with it every write in it; when the database refused it (a bad value, or one
   * write waiting on another writer's lock for longer than the function's lock_timeout),
   * GroupedWrites makes each on its own.
   */
  private async writeGroup(calls: StageWriteCall[]): Promise<StageWriteAnswer[]> {
    // One join makes the one flat copy of the writes: a `[${…}]` around it would leave a rope that
    // the driver's byteLength flattens into a second copy of every payload.
    if (calls.length === 0) return [];
    const parts = calls.map((c) => `{"m":${JSON.stringify(c.messageId)},"p":${c.json}}`);
    parts[0] = `[${parts[0]}`;
    parts[parts.length - 1] += ']';
    const writes = parts.join(',');
    const rows: { n: number; result: StageWriteAnswer }[] = await this.prepared(
      'conclave_stage_write_group',
      'SELECT n, result FROM conclave_stage_write_group($1::jsonb)',
      [writes],
    );
    if (rows.length !== calls.length || rows.some((row, i) => row.n !== i + 1)) {
      throw new Error(`a group of ${calls.length} stage writes answered ${rows.length} rows out of order`);
    }
    return rows.map((row) => row.result);
  }

  async load(messageId: string, historyTurns: number): Promise<LoadedDeliberation | null> {
    const [message]: (MessageRow & {
      question: string | null;
      stage_rows: StageRowRecord[];
      model_calls: (ModelCallRecord & { stage: string })[];
      stage_opened_at: Date | null;
      grading: unknown;
    })[] = await this.prepared('conclave_load_message', LOAD_MESSAGE, [messageId]);
    if (!message) return null;
    let history: HistoryTurn[] = [];
    if (historyTurns > 0 && message.turn > 1) {
      const turns: { question: string; answer: string }[] = await this.dataSource.query(
        `SELECT u.content AS question, a.content AS answer
         FROM messages a JOIN messages u ON u.conversation_id = a.conversation_id AND u.turn = a.turn AND u.role = 'user'
         WHERE a.conversation_id = $1 AND a.role = 'assistant' AND a.status = 'complete' AND a.turn < $2
         ORDER BY a.turn DESC LIMIT $3`,
        [message.conversation_id, message.turn, historyTurns],
      );
      history = turns.reverse();
    }
    return {
      messageId: message.id,
      conversationId: message.conversation_id,
      mode: message.mode,
      status: message.status,
      stage: message.stage,
      needsTitle: message.needs_title,
      createdAt: new Date(message.created_at),
      batchId: message.batch_id,
      stageOpenedAt: message.stage_opened_at ? new Date(message.stage_opened_at) : null,
      question: message.question ?? '',
      config: message.config,
      ...gradingFields(storedGrading(message.grading)),
      history,
      rows: message.stage_rows.map(toStageRow),
      outcomes: outcomesByStage(message.model_calls),
    };
  }

  async loadOutcomes(messageId: string, stage: string): Promise<CallOutcome[]> {
    const records = await this.prepared<ModelCallRecord>(
      'conclave_load_outcomes',
      `SELECT ${MODEL_CALL_COLUMNS} FROM model_calls WHERE message_id = $1 AND stage = $2`,
      [messageId, stage],
    );
    return records.map(toOutcome);
  }

  async eventsAfter(messageId: string, afterSeq: number): Promise<DeliveredEvent[]> {
    const records = await this.prepared<EventRecord>(
      'conclave_events_after',
      // Naming the partition key (the message's created_at) reads one partition of the events.
      `SELECT message_id, seq, type, payload, created_at FROM deliberation_events
       WHERE message_id = $1 AND message_created_at = (SELECT created_at FROM messages WHERE id = $1)
         AND seq > $2 ORDER BY seq`,
      [messageId, afterSeq],
    );
    return records.map(toDeliveredEvent);
  }

  /**
   * eventsAfter, and whether the deliberation has ended (or is gone), read in one statement: one
   * snapshot, so when it ended through a stage write its terminal event is among the events (when
   * due). (A batch item cancelled while still queued, or stopped by its batch's budget, before
   * such items got their `cancelled` event, ends with its status alone.) A subscription's replay,
   * which otherwise asks the status in a second round trip.
   */
  async replayAfter(messageId: string, afterSeq: number): Promise<StoredReplay> {
    const records = await this.prepared<EventRecord & { status: string | null }>(
      'conclave_replay_after',
      `SELECT message_id, seq, type, payload, created_at, NULL::text AS status FROM deliberation_events
       WHERE message_id = $1 AND message_created_at = (SELECT created_at FROM messages WHERE id = $1)
         AND seq > $2
       UNION ALL
       SELECT id, NULL, NULL, NULL, NULL, status FROM messages WHERE id = $1
       ORDER BY seq NULLS LAST`,
      [messageId, afterSeq],
    );
    const status = records.find((r) => r.seq === null)?.status ?? null;
    return {
      events: records.filter((r) => r.seq !== null).map(toDeliveredEvent),
      finished: status === null || isTerminalStatus(status),
    };
  }

  /**
   * replayAfter for a subscriber who must own the message: the same one statement, where the
   * message counts only if it is an assistant message of one of `userId`'s conversations. Null when
   * it is not (or does not exist): a new subscription checks ownership and replays in one round trip.
   */
  async replayOwnedAfter(userId: string, messageId: string, afterSeq: number): Promise<StoredReplay | null> {
    const records = await this.prepared<EventRecord & { status: string | null }>(
      'conclave_replay_owned_after',
      `SELECT message_id, seq, type, payload, created_at, NULL::text AS status FROM deliberation_events
       WHERE message_id = $1 AND message_created_at = (
           SELECT m.created_at FROM messages m JOIN conversations c ON c.id = m.conversation_id
           WHERE m.id = $1 AND m.role = 'assistant' AND c.user_id = $3)
         AND seq > $2
       UNION ALL
       SELECT m.id, NULL, NULL, NULL, NULL, m.status FROM messages m JOIN conversations c ON c.id = m.conversation_id
       WHERE m.id = $1 AND m.role = 'assistant' AND c.user_id = $3
       ORDER BY seq NULLS LAST`,
      [messageId, afterSeq, userId],
    );
    const owned = records.find((r) => r.seq === null);
    if (!owned) return null;
    return {
      events: records.filter((r) => r.seq !== null).map(toDeliveredEvent),
      finished: owned.status === null || isTerminalStatus(owned.status),
    };
  }

  async unfinishedMessages(idleMs: number): Promise<UnfinishedMessage[]> {
    // Batch items still waiting for a slot of their batch have no job by design.
    const rows: { id: string; stage: string; batch_id: string | null }[] = await this.dataSource.query(
      `SELECT id, stage, batch_id FROM messages WHERE role = 'assistant' AND status = ANY(conclave_open_statuses())
         AND stage IS NOT NULL AND (batch_id IS NULL OR dispatched_at IS NOT NULL)
         AND updated_at < now() - make_interval(secs => $1::float / 1000)
       ORDER BY updated_at LIMIT 500`,
      [idleMs],
    );
    return rows.map((r) => ({ messageId: r.id, stage: r.stage, batchId: r.batch_id }));
  }
}
