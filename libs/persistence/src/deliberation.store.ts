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
  UnfinishedMessage,
} from '@conclave/deliberation';
import type { DataSource, EntityManager } from 'typeorm';

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
  cost_usd: string | null;
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
  cost_usd: string | null;
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

const num = (value: string | null): number | null => (value === null ? null : Number(value));

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

class LockedMessage implements MessageTransaction {
  constructor(
    private readonly manager: EntityManager,
    readonly message: MessageState,
    private lastSeq: number,
  ) {}

  async appendEvents(events: ModeEvent[]): Promise<DeliveredEvent[]> {
    if (events.length === 0) return [];
    const existing: { event_key: string }[] = await this.manager.query(
      'SELECT event_key FROM deliberation_events WHERE message_id = $1 AND event_key = ANY($2)',
      [this.message.messageId, events.map((e) => e.key)],
    );
    const seen = new Set(existing.map((e) => e.event_key));
    const fresh = events.filter((e) => !seen.has(e.key) && (seen.add(e.key), true));
    const delivered: DeliveredEvent[] = [];
    for (const event of fresh) {
      this.lastSeq += 1;
      const [record]: EventRecord[] = await this.manager.query(
        // clock_timestamp(), not now(): a transaction that waited for the lock must not stamp
        // a later seq with an earlier time.
        `INSERT INTO deliberation_events (message_id, seq, event_key, type, payload, created_at)
         VALUES ($1, $2, $3, $4, $5, clock_timestamp()) RETURNING message_id, seq, type, payload, created_at`,
        [this.message.messageId, this.lastSeq, event.key, event.type, event.payload],
      );
      delivered.push(toDeliveredEvent(record));
    }
    if (fresh.length > 0) {
      await this.manager.query('UPDATE messages SET last_seq = $2 WHERE id = $1', [
        this.message.messageId,
        this.lastSeq,
      ]);
    }
    return delivered;
  }

  async insertRows(rows: StageRow[]): Promise<void> {
    for (const row of rows) {
      await this.manager.query(
        `INSERT INTO deliberation_stages (message_id, stage_type, stage_order, model, role, content, parsed_data,
           response_time_ms, prompt_tokens, completion_tokens, cost_usd, participant)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) ON CONFLICT DO NOTHING`,
        [
          this.message.messageId,
          row.stageType,
          row.stageOrder,
          row.model,
          row.role,
          row.content,
          row.parsedData,
          row.responseTimeMs,
          row.promptTokens,
          row.completionTokens,
          row.costUsd,
          row.participant ?? null,
        ],
      );
    }
  }

  async update(update: MessageUpdate): Promise<void> {
    const sets: string[] = ['updated_at = now()'];
    const params: unknown[] = [this.message.messageId];
    const set = (column: string, value: unknown) => {
      params.push(value);
      sets.push(`${column} = $${params.length}`);
    };
    if (update.status !== undefined) set('status', update.status);
    if (update.stage !== undefined) set('stage', update.stage);
    if (update.error !== undefined) set('error', update.error);
    if (update.content !== undefined) set('content', update.content);
    if (update.completed) sets.push('completed_at = now()');
    await this.manager.query(`UPDATE messages SET ${sets.join(', ')} WHERE id = $1`, params);
    await this.manager.query('UPDATE conversations SET updated_at = now() WHERE id = $1', [
      this.message.conversationId,
    ]);
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
}

export class TypeOrmDeliberationStore implements DeliberationStore {
  constructor(private readonly dataSource: DataSource) {}

  async load(messageId: string, historyTurns: number): Promise<LoadedDeliberation | null> {
    const [message]: MessageRow[] = await this.dataSource.query(
      `SELECT id, conversation_id, mode, status, stage, needs_title, created_at, config, turn, last_seq, batch_id
       FROM messages WHERE id = $1 AND role = 'assistant'`,
      [messageId],
    );
    if (!message) return null;
    const [question]: { content: string }[] = await this.dataSource.query(
      `SELECT content FROM messages WHERE conversation_id = $1 AND turn = $2 AND role = 'user'`,
      [message.conversation_id, message.turn],
    );
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
      question: question?.content ?? '',
      config: message.config,
      history,
      rows: await loadStageRows(this.dataSource, messageId),
      outcomes: await this.allOutcomes(messageId),
    };
  }

  private async allOutcomes(messageId: string): Promise<Record<string, CallOutcome[]>> {
    const records: (ModelCallRecord & { stage: string })[] = await this.dataSource.query(
      `SELECT stage, call_key, model, served_model, ok, content, error, response_time_ms, prompt_tokens,
         completion_tokens, cost_usd, simulated FROM model_calls WHERE message_id = $1 ORDER BY created_at, id`,
      [messageId],
    );
    const byStage: Record<string, CallOutcome[]> = {};
    for (const record of records) (byStage[record.stage] ??= []).push(toOutcome(record));
    return byStage;
  }

  async loadOutcomes(messageId: string, stage: string): Promise<CallOutcome[]> {
    const records: ModelCallRecord[] = await this.dataSource.query(
      `SELECT call_key, model, served_model, ok, content, error, response_time_ms, prompt_tokens, completion_tokens,
         cost_usd, simulated FROM model_calls WHERE message_id = $1 AND stage = $2`,
      [messageId, stage],
    );
    return records.map(toOutcome);
  }

  async saveOutcome(messageId: string, stage: string, outcome: CallOutcome): Promise<CallOutcome> {
    const ok = outcome.ok;
    await this.dataSource.query(
      `INSERT INTO model_calls (message_id, stage, call_key, model, served_model, ok, content, error, response_time_ms,
         prompt_tokens, completion_tokens, cost_usd, simulated)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13) ON CONFLICT DO NOTHING`,
      [
        messageId,
        stage,
        outcome.key,
        outcome.model,
        ok ? outcome.servedModel : null,
        ok,
        ok ? outcome.content : null,
        ok ? null : outcome.error,
        outcome.responseTimeMs,
        ok ? outcome.promptTokens : null,
        ok ? outcome.completionTokens : null,
        ok ? outcome.costUsd : null,
        ok ? outcome.simulated : false,
      ],
    );
    const stored = (await this.loadOutcomes(messageId, stage)).find((o) => o.key === outcome.key);
    return stored ?? outcome;
  }

  async withMessageLock<T>(
    messageId: string,
    work: (tx: MessageTransaction) => Promise<T>,
  ): Promise<T | null> {
    return this.dataSource.transaction(async (manager) => {
      const [row]: MessageRow[] = await manager.query(
        `SELECT id, conversation_id, mode, status, stage, needs_title, created_at, config, turn, last_seq, batch_id
         FROM messages WHERE id = $1 FOR UPDATE`,
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
      return work(new LockedMessage(manager, state, row.last_seq));
    });
  }

  async eventsAfter(messageId: string, afterSeq: number): Promise<DeliveredEvent[]> {
    const records: EventRecord[] = await this.dataSource.query(
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
