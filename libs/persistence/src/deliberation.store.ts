import type { DeliveredEvent, ModeName, Usage } from '@conclave/contracts';
import type {
  CallOutcome,
  DeliberationStore,
  HistoryTurn,
  LoadedDeliberation,
  MessageState,
  MessageTransaction,
  MessageUpdate,
  ModeEvent,
  StageRow,
  StageWrite,
  StageWriteResult,
  UnfinishedMessage,
} from '@conclave/deliberation';
import type { Pool, QueryResultRow } from 'pg';
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
  if (!r.ok) {
    return {
      ok: false,
      key: r.call_key,
      model: r.model,
      responseTimeMs: r.response_time_ms,
      error: r.error ?? '',
    };
  }
  return {
    ok: true,
    key: r.call_key,
    model: r.model,
    responseTimeMs: r.response_time_ms,
    content: r.content ?? '',
    servedModel: r.served_model ?? r.model,
    promptTokens: r.prompt_tokens,
    completionTokens: r.completion_tokens,
    costUsd: num(r.cost_usd),
    simulated: r.simulated,
  };
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
  completion_tokens, cost_usd, simulated`;

/**
 * Appends the events whose keys are new, numbered after `lastSeq`, in one statement. Only correct
 * under the message's row lock: the lock taken by an earlier statement of the transaction means
 * this statement's snapshot already sees every event stored before. `messages.last_seq` is written
 * when the transaction ends (LockedMessage.flush).
 */
const APPEND_EVENTS = `
WITH input AS (
  SELECT e.key, e.type, e.payload, e.ord
  FROM ROWS FROM (jsonb_to_recordset($2::jsonb) AS (key text, type text, payload jsonb)) WITH ORDINALITY
    AS e(key, type, payload, ord)),
fresh AS (
  SELECT DISTINCT ON (i.key) i.* FROM input i
  WHERE NOT EXISTS (SELECT 1 FROM deliberation_events d WHERE d.message_id = $1 AND d.event_key = i.key)
  ORDER BY i.key, i.ord),
numbered AS (SELECT f.*, ($3::int + row_number() OVER (ORDER BY f.ord))::int AS seq FROM fresh f),
inserted AS (
  -- clock_timestamp(), not now(): a transaction that waited for the lock must not stamp a later seq
  -- with an earlier time.
  INSERT INTO deliberation_events (message_id, seq, event_key, type, payload, created_at)
  SELECT $1, n.seq, n.key, n.type, n.payload, clock_timestamp() FROM numbered n ORDER BY n.seq
  RETURNING message_id, seq, type, payload, created_at)
SELECT message_id, seq, type, payload, created_at FROM inserted ORDER BY seq`;

const INSERT_STAGE_ROWS = `
INSERT INTO deliberation_stages (message_id, stage_type, stage_order, model, role, content, parsed_data,
  response_time_ms, prompt_tokens, completion_tokens, cost_usd, participant)
SELECT $1, r.stage_type, r.stage_order, r.model, r.role, r.content, r.parsed_data, r.response_time_ms,
  r.prompt_tokens, r.completion_tokens, r.cost_usd, r.participant
FROM ROWS FROM (jsonb_to_recordset($2::jsonb) AS (stage_type text, stage_order int, model text, role text,
  content text, parsed_data jsonb, response_time_ms int, prompt_tokens int, completion_tokens int,
  cost_usd numeric, participant int)) WITH ORDINALITY
  AS r(stage_type, stage_order, model, role, content, parsed_data, response_time_ms, prompt_tokens,
    completion_tokens, cost_usd, participant, ord)
ORDER BY r.ord
ON CONFLICT DO NOTHING`;

const INSERT_OUTCOME = `INSERT INTO model_calls (message_id, stage, call_key, model, served_model, ok, content, error,
    response_time_ms, prompt_tokens, completion_tokens, cost_usd, simulated)
  VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)
  ON CONFLICT DO NOTHING RETURNING call_key`;

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

function outcomeParams(messageId: string, stage: string, outcome: CallOutcome): unknown[] {
  const r = outcomeRecord(outcome);
  return [
    messageId,
    stage,
    r.call_key,
    r.model,
    r.served_model,
    r.ok,
    r.content,
    r.error,
    r.response_time_ms,
    r.prompt_tokens,
    r.completion_tokens,
    r.cost_usd,
    r.simulated,
  ];
}

/**
 * Stores the outcome unless the call has one already (an earlier run of the stage). Returns the
 * outcome given when it was stored, else the one stored before (a different object).
 */
async function saveOutcomeWith(
  manager: EntityManager,
  messageId: string,
  stage: string,
  outcome: CallOutcome,
): Promise<CallOutcome> {
  const inserted: unknown[] = await manager.query(INSERT_OUTCOME, outcomeParams(messageId, stage, outcome));
  if (inserted.length > 0) return outcome;
  const [stored]: ModelCallRecord[] = await manager.query(
    `SELECT ${MODEL_CALL_COLUMNS} FROM model_calls WHERE message_id = $1 AND stage = $2 AND call_key = $3`,
    [messageId, stage, outcome.key],
  );
  return stored ? toOutcome(stored) : outcome;
}

/**
 * The work of one transaction under a message's row lock. Changes to the message row itself
 * (status, stage, last_seq) are collected and written by one UPDATE at the end: updating a row a
 * second time in the same transaction makes PostgreSQL re-check its foreign keys, and the check of
 * `batch_id` would queue behind the batch dispatcher's lock on the batch row.
 */
class LockedMessage implements MessageTransaction {
  private change: MessageUpdate | null = null;
  private readonly storedSeq: number;

  constructor(
    private readonly manager: EntityManager,
    readonly message: MessageState,
    private lastSeq: number,
  ) {
    this.storedSeq = lastSeq;
  }

  async appendEvents(events: ModeEvent[]): Promise<DeliveredEvent[]> {
    if (events.length === 0) return [];
    const records: EventRecord[] = await this.manager.query(APPEND_EVENTS, [
      this.message.messageId,
      JSON.stringify(events.map(({ key, type, payload }) => ({ key, type, payload }))),
      this.lastSeq,
    ]);
    this.lastSeq += records.length;
    return records.map(toDeliveredEvent);
  }

  async insertRows(rows: StageRow[]): Promise<void> {
    if (rows.length === 0) return;
    await this.manager.query(INSERT_STAGE_ROWS, [
      this.message.messageId,
      JSON.stringify(rows.map(stageRowRecord)),
    ]);
  }

  async update(update: MessageUpdate): Promise<void> {
    this.change = {
      ...this.change,
      ...update,
      completed: Boolean(this.change?.completed || update.completed),
    };
  }

  /** Writes what the transaction changed on the message row, in one statement. */
  async flush(): Promise<void> {
    const change = this.change;
    if (!change && this.lastSeq === this.storedSeq) return;
    const sets: string[] = [];
    const params: unknown[] = [this.message.messageId];
    const set = (column: string, value: unknown) => {
      params.push(value);
      sets.push(`${column} = $${params.length}`);
    };
    if (this.lastSeq !== this.storedSeq) set('last_seq', this.lastSeq);
    if (!change) {
      await this.manager.query(`UPDATE messages SET ${sets.join(', ')} WHERE id = $1`, params);
      return;
    }
    sets.push('updated_at = now()');
    if (change.status !== undefined) set('status', change.status);
    if (change.stage !== undefined) set('stage', change.stage);
    if (change.error !== undefined) set('error', change.error);
    if (change.content !== undefined) set('content', change.content);
    if (change.completed) sets.push('completed_at = now()');
    await this.manager.query(
      `WITH moved AS (UPDATE messages SET ${sets.join(', ')} WHERE id = $1 RETURNING conversation_id)
       UPDATE conversations SET updated_at = now() WHERE id IN (SELECT conversation_id FROM moved)`,
      params,
    );
  }

  async setTitleIfUnset(title: string): Promise<string> {
    const [row] = returnedRows<{ title: string }>(
      await this.manager.query(
        `UPDATE conversations SET title = COALESCE(title, $2) WHERE id = $1 RETURNING title`,
        [this.message.conversationId, title],
      ),
    );
    return row?.title ?? title;
  }

  saveOutcome(stage: string, outcome: CallOutcome): Promise<CallOutcome> {
    return saveOutcomeWith(this.manager, this.message.messageId, stage, outcome);
  }
}

/**
 * The message with its question, stage rows and model outcomes in one round trip: a stage job
 * reads everything it needs at once.
 */
const LOAD_MESSAGE = `
SELECT m.id, m.conversation_id, m.mode, m.status, m.stage, m.needs_title, m.created_at, m.config, m.turn,
  m.last_seq, m.batch_id,
  (SELECT u.content FROM messages u WHERE u.conversation_id = m.conversation_id AND u.turn = m.turn
     AND u.role = 'user') AS question,
  (SELECT COALESCE(json_agg(json_build_object('stage_type', s.stage_type, 'stage_order', s.stage_order,
      'model', s.model, 'role', s.role, 'content', s.content, 'parsed_data', s.parsed_data,
      'response_time_ms', s.response_time_ms, 'prompt_tokens', s.prompt_tokens,
      'completion_tokens', s.completion_tokens, 'cost_usd', s.cost_usd, 'participant', s.participant)
      ORDER BY s.stage_order, s.participant NULLS FIRST, s.created_at, s.id), '[]')
   FROM deliberation_stages s WHERE s.message_id = m.id) AS stage_rows,
  (SELECT COALESCE(json_agg(json_build_object('stage', c.stage, 'call_key', c.call_key, 'model', c.model,
      'served_model', c.served_model, 'ok', c.ok, 'content', c.content, 'error', c.error,
      'response_time_ms', c.response_time_ms, 'prompt_tokens', c.prompt_tokens,
      'completion_tokens', c.completion_tokens, 'cost_usd', c.cost_usd, 'simulated', c.simulated)
      ORDER BY c.created_at, c.id), '[]')
   FROM model_calls c WHERE c.message_id = m.id) AS model_calls
FROM messages m WHERE m.id = $1 AND m.role = 'assistant'`;

export class TypeOrmDeliberationStore implements DeliberationStore {
  constructor(private readonly dataSource: DataSource) {}

  /**
   * The statements every stage (or every subscriber) runs, as named prepared statements: each pooled connection
   * parses and plans them once instead of on every call (pg's `name`; TypeORM's query() has no way
   * to ask for it). PostgreSQL re-plans them itself after a schema change.
   */
  private async prepared<T>(name: string, text: string, values: unknown[]): Promise<T[]> {
    const pool = (this.dataSource.driver as PostgresDriver).master as Pool;
    const result = await pool.query<T & QueryResultRow>({ name, text, values });
    return result.rows;
  }

  /** One round trip: conclave_stage_write (migration 1763820000000) does the work under the row lock. */
  async writeStage(messageId: string, write: StageWrite): Promise<StageWriteResult> {
    const [row]: { result: { result: StageWriteResult['kind']; events?: EventRecord[] } }[] =
      await this.prepared('conclave_stage_write', 'SELECT conclave_stage_write($1, $2::jsonb) AS result', [
        messageId,
        JSON.stringify({
          stage: write.stage,
          guard: write.guard ?? false,
          markRunning: write.markRunning ?? false,
          outcomes: (write.outcomes ?? []).map(outcomeRecord),
          rows: (write.rows ?? []).map(stageRowRecord),
          events: write.events.map(({ key, type, payload }) => ({ key, type, payload })),
          ...(write.update ? { update: write.update } : {}),
          ...(write.title !== undefined ? { title: write.title } : {}),
        }),
      ]);
    const { result, events } = row.result;
    if (result === 'written') return { kind: 'written', events: (events ?? []).map(toDeliveredEvent) };
    return { kind: result };
  }

  async load(messageId: string, historyTurns: number): Promise<LoadedDeliberation | null> {
    const [message]: (MessageRow & {
      question: string | null;
      stage_rows: StageRowRecord[];
      model_calls: (ModelCallRecord & { stage: string })[];
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
    const outcomes: Record<string, CallOutcome[]> = {};
    for (const record of message.model_calls) (outcomes[record.stage] ??= []).push(toOutcome(record));
    return {
      messageId: message.id,
      conversationId: message.conversation_id,
      mode: message.mode,
      status: message.status,
      stage: message.stage,
      needsTitle: message.needs_title,
      createdAt: new Date(message.created_at),
      batchId: message.batch_id,
      question: message.question ?? '',
      config: message.config,
      history,
      rows: message.stage_rows.map(toStageRow),
      outcomes,
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

  async withMessageLock<T>(
    messageId: string,
    work: (tx: MessageTransaction) => Promise<T>,
  ): Promise<T | null> {
    return this.dataSource.transaction(async (manager) => {
      // NO KEY UPDATE: holders exclude each other, while rows that merely reference the message
      // (their foreign-key checks take KEY SHARE) are not held up.
      const [row]: MessageRow[] = await manager.query(
        `SELECT id, conversation_id, mode, status, stage, needs_title, created_at, config, turn, last_seq, batch_id
         FROM messages WHERE id = $1 FOR NO KEY UPDATE`,
        [messageId],
      );
      if (!row) return null;
      const state: MessageState = {
        messageId: row.id,
        conversationId: row.conversation_id,
        mode: row.mode,
        status: row.status,
        stage: row.stage,
        needsTitle: row.needs_title,
        createdAt: new Date(row.created_at),
        batchId: row.batch_id,
      };
      const locked = new LockedMessage(manager, state, row.last_seq);
      const result = await work(locked);
      await locked.flush();
      return result;
    });
  }

  async eventsAfter(messageId: string, afterSeq: number): Promise<DeliveredEvent[]> {
    const records = await this.prepared<EventRecord>(
      'conclave_events_after',
      `SELECT message_id, seq, type, payload, created_at FROM deliberation_events
       WHERE message_id = $1 AND seq > $2 ORDER BY seq`,
      [messageId, afterSeq],
    );
    return records.map(toDeliveredEvent);
  }

  async unfinishedMessages(idleMs: number): Promise<UnfinishedMessage[]> {
    // Batch items still waiting for a slot of their batch have no job by design.
    const rows: { id: string; stage: string; batch_id: string | null }[] = await this.dataSource.query(
      `SELECT id, stage, batch_id FROM messages WHERE role = 'assistant' AND status IN ('queued', 'running')
         AND stage IS NOT NULL AND (batch_id IS NULL OR dispatched_at IS NOT NULL)
         AND updated_at < now() - make_interval(secs => $1::float / 1000)
       ORDER BY updated_at LIMIT 500`,
      [idleMs],
    );
    return rows.map((r) => ({ messageId: r.id, stage: r.stage, batchId: r.batch_id }));
  }

  async usage(messageId: string): Promise<Usage> {
    const [row]: { prompt: string | null; completion: string | null; cost: string | null }[] =
      await this.dataSource.query(
        `SELECT SUM(prompt_tokens) AS prompt, SUM(completion_tokens) AS completion, SUM(cost_usd) AS cost
         FROM model_calls WHERE message_id = $1`,
        [messageId],
      );
    return {
      promptTokens: Number(row?.prompt ?? 0),
      completionTokens: Number(row?.completion ?? 0),
      costUsd: Number(row?.cost ?? 0),
    };
  }
}
