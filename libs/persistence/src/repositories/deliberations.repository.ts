import {
  FIRST_STAGE_START_MAX_CHARS,
  type CallSummary,
  type DeliberationAccepted,
  type FinishReason,
  type FirstStageStart,
  type Grading,
  type MessageStatus,
  type ModeName,
  type StartedStageCall,
  type StoredStageCall,
} from '@conclave/contracts';
import { storedGrading, type HistoryTurn, type StageRow } from '@conclave/deliberation';
import type { DataSource } from 'typeorm';
import { loadStageRows, toStageRow, type StageRowRecord } from '../deliberation.store';
import type { MessageRecord } from '../entities';
import type { SnakeCased } from '../row-names';
import { recordResponse, type IdempotencyKey } from './idempotency.repository';

/**
 * A stored message (either role) with its conversation's title; `stage` is the stage it is at (null
 * once it has ended), `batchId` the batch it is an item of, if any.
 */
export type StoredMessage = Pick<
  MessageRecord,
  | 'id'
  | 'conversationId'
  | 'role'
  | 'content'
  | 'status'
  | 'error'
  | 'turn'
  | 'mode'
  | 'config'
  | 'needsTitle'
  | 'lastSeq'
  | 'createdAt'
  | 'completedAt'
  | 'stage'
  | 'batchId'
> & { title: string | null };

/** A StoredMessage as PostgreSQL returns it (STORED_MESSAGE_COLUMNS). */
export type StoredMessageRecord = SnakeCased<StoredMessage>;

/** The columns of StoredMessageRecord, from `messages m JOIN conversations c`. */
export const STORED_MESSAGE_COLUMNS = `m.id, m.conversation_id, m.role, m.content, m.status, m.error, m.turn,
  m.mode, m.config, m.needs_title, m.last_seq, m.created_at, m.completed_at, c.title, m.stage, m.batch_id`;

export function toStoredMessage(r: StoredMessageRecord): StoredMessage {
  return {
    id: r.id,
    conversationId: r.conversation_id,
    role: r.role,
    content: r.content,
    status: r.status,
    error: r.error,
    turn: r.turn,
    mode: r.mode,
    config: r.config,
    needsTitle: r.needs_title,
    lastSeq: r.last_seq,
    createdAt: r.created_at,
    completedAt: r.completed_at,
    title: r.title,
    stage: r.stage,
    batchId: r.batch_id,
  };
}

/** A model_calls row as the view's reads select it. */
interface CallRecord {
  message_id: string;
  stage: string;
  call_key: string;
  model: string;
  ok: boolean;
  content: string | null;
  error: string | null;
  finish_reason: FinishReason | null;
  response_time_ms: number;
  prompt_tokens: number | null;
  completion_tokens: number | null;
  cost_usd: string | null;
}

const toCallSummary = (r: Omit<CallRecord, 'message_id' | 'call_key' | 'content'>): CallSummary => ({
  stage: r.stage,
  model: r.model,
  ok: r.ok,
  error: r.error,
  finishReason: r.finish_reason,
  truncated: r.finish_reason === 'length',
  responseTimeMs: r.response_time_ms,
  promptTokens: r.prompt_tokens,
  completionTokens: r.completion_tokens,
  costUsd: r.cost_usd === null ? null : Number(r.cost_usd),
});

const toStoredStageCall = (r: CallRecord): StoredStageCall => ({
  stage: r.stage,
  key: r.call_key,
  model: r.model,
  ok: r.ok,
  content: r.content,
  error: r.error,
  finishReason: r.finish_reason,
});

/** A new turn: the user's message and the assistant message that deliberates on it. */
export interface NewTurn {
  userId: string;
  /** The conversation to follow up; a new conversation when absent. */
  conversationId?: string;
  mode: ModeName;
  /** What the user's message stores (the question, or the mode's rendering of it). */
  userContent: string;
  config: unknown;
  firstStage: string;
  /**
   * A new conversation only: earlier exchanges stored first as its completed turns 1..n (an
   * OpenAI-compatible request's earlier messages), so the worker loads them as history.
   */
  history?: HistoryTurn[];
  /** The API key the request came with (null without one): revoking it cancels the turn. */
  apiKeyId?: string | null;
  /**
   * Issue 37: the expected answer and its grader, as validated; kept in the user message's config
   * (`expected`, `grader`), as a batch item keeps them, for grading to read. Absent: config NULL.
   */
  grading?: Grading;
}

/** A conversation about to get a follow-up turn, read under its row lock. */
export interface FollowUpState {
  mode: ModeName;
  /** The last turn stored, null when it has none. */
  lastTurn: number | null;
  /** Assistant messages still queued or running. */
  pending: number;
}

/** One of a user's deliberations, as a listing shows it. */
export interface RecentDeliberation {
  messageId: string;
  mode: ModeName;
  status: MessageStatus;
  createdAt: Date;
  /** Its conversation's title (null until one is made). */
  title: string | null;
  /** The first 200 characters of its question. */
  question: string;
}

export interface StartedTurn {
  conversationId: string;
  messageId: string;
  /** The turn started its conversation. */
  isNew: boolean;
  /** The first turn of a conversation (not too big to carry): its first job runs from this, without a load. */
  start?: FirstStageStart;
}

/** A message as startTurn's INSERT returns it. */
interface InsertedMessage {
  id: string;
  role: 'user' | 'assistant';
  created_at: Date;
  config: unknown;
  conversation_id: string;
  /** The user message's config (insertTurn adds it to the assistant message's row): a graded turn's grading. */
  user_config?: unknown;
}

/**
 * The turn as stored. The first turn of a conversation: what a load of it would return rides in its
 * first job (unless it is too big to keep in Redis beside the job).
 */
function startedTurn(
  turn: NewTurn,
  conversationId: string,
  assistant: InsertedMessage,
  isNew: boolean,
  firstTurn: boolean,
): StartedTurn {
  const grading = storedGrading(assistant.user_config);
  const start: FirstStageStart = {
    conversationId,
    mode: turn.mode,
    question: turn.userContent,
    config: assistant.config,
    createdAt: new Date(assistant.created_at).toISOString(),
    // As a load reads it: from the stored jsonb (its key order), not from the request.
    ...(grading ? { grading } : {}),
  };
  const carried = firstTurn && JSON.stringify(start).length <= FIRST_STAGE_START_MAX_CHARS;
  return { conversationId, messageId: assistant.id, isNew, ...(carried ? { start } : {}) };
}

/**
 * The INSERT of a turn's two messages, the question and the queued assistant message, into the
 * conversation `conversation` (an SQL expression: `$8`, or a CTE's id). Its parameters, in
 * insertTurn's order: $1 question, $2 turn, $3 mode, $4 config, $5 first stage, $6 needs_title,
 * $7 API key id, $8 the conversation id (or what the CTE reads, the user id).
 */
const TURN_MESSAGES = (conversation: string): string =>
  `INSERT INTO messages (conversation_id, role, content, status, turn, mode, config, stage, needs_title, api_key_id)
   VALUES (${conversation}, 'user', $1, 'complete', $2, $3, $9::jsonb, NULL, false, NULL),
          (${conversation}, 'assistant', '', 'queued', $2, $3, $4, $5, $6, $7::uuid)
   RETURNING id, role, created_at, config, conversation_id`;

/** Runs a TURN_MESSAGES statement (both start paths go through it) and returns the assistant message. */
async function insertTurn(
  runner: Pick<DataSource, 'query'>,
  sql: string,
  turn: NewTurn,
  number: number,
  needsTitle: boolean,
  last: string,
): Promise<InsertedMessage> {
  const inserted: InsertedMessage[] = await runner.query(sql, [
    turn.userContent,
    number,
    turn.mode,
    turn.config,
    turn.firstStage,
    needsTitle,
    turn.apiKeyId ?? null,
    last,
    turn.grading ? JSON.stringify({ expected: turn.grading.expected, grader: turn.grading.grader }) : null,
  ]);
  const assistant = inserted.find((row) => row.role === 'assistant');
  if (!assistant) throw new Error('the assistant message was not stored');
  return { ...assistant, user_config: inserted.find((row) => row.role === 'user')?.config ?? null };
}

/** Deliberations as the gateway sees them: starting a turn, the assistant message, its stage rows and events' position. */
export class DeliberationsRepository {
  constructor(private readonly dataSource: DataSource) {}

  /**
   * Stores the turn in one transaction (and the idempotency key's response with it). A follow-up
   * locks its conversation and hands its state to `admit`, which throws to refuse the turn (the
   * transaction rolls back); null when the user has no such conversation. Throws IdempotencyRace
   * when a twin request with the same key stored first.
   */
  startTurn(
    turn: NewTurn,
    idempotency: IdempotencyKey | null,
    admit: (conversation: FollowUpState) => void,
  ): Promise<StartedTurn | null> {
    if (!turn.conversationId && !turn.history?.length && !idempotency) return this.startConversation(turn);
    return this.dataSource.transaction(async (manager) => {
      let conversationId = turn.conversationId;
      let number = 1;
      if (conversationId) {
        const [conversation]: { mode: ModeName }[] = await manager.query(
          'SELECT mode FROM conversations WHERE id = $1 AND user_id = $2 FOR UPDATE',
          [conversationId, turn.userId],
        );
        if (!conversation) return null;
        const [{ last, pending }]: { last: number | null; pending: number }[] = await manager.query(
          `SELECT MAX(turn) AS last,
             COUNT(*) FILTER (WHERE role = 'assistant' AND status = ANY(conclave_open_statuses()))::int AS pending
           FROM messages WHERE conversation_id = $1`,
          [conversationId],
        );
        admit({ mode: conversation.mode, lastTurn: last, pending });
        number = (last ?? 0) + 1;
      } else {
        const [conversation]: { id: string }[] = await manager.query(
          'INSERT INTO conversations (user_id, mode) VALUES ($1, $2) RETURNING id',
          [turn.userId, turn.mode],
        );
        conversationId = conversation.id;
        for (const earlier of turn.history ?? []) {
          await manager.query(
            `INSERT INTO messages (conversation_id, role, content, status, turn, mode, config, completed_at)
             VALUES ($1, 'user', $2, 'complete', $4, $5, NULL, now()), ($1, 'assistant', $3, 'complete', $4, $5, $6, now())`,
            [conversationId, earlier.question, earlier.answer, number, turn.mode, turn.config],
          );
          number += 1;
        }
      }
      // A new conversation (or one without turns) gets a title.
      const isNew = !turn.conversationId || number === 1;
      // The question and the assistant message in one statement (the same now() as two).
      const assistant = await insertTurn(manager, TURN_MESSAGES('$8'), turn, number, isNew, conversationId);
      // A conversation created above has updated_at = now() already.
      if (turn.conversationId)
        await manager.query('UPDATE conversations SET updated_at = now() WHERE id = $1', [conversationId]);
      if (idempotency) {
        const accepted: DeliberationAccepted = { conversationId, messageId: assistant.id };
        await recordResponse(manager, idempotency, accepted);
      }
      return startedTurn(turn, conversationId, assistant, isNew, number === 1);
    });
  }

  /**
   * A new conversation with nothing else to store (no earlier turns, no idempotency key): its row
   * and both messages in one statement, atomic on its own, so one round trip instead of a
   * transaction's four (the common request, and the whole of a burst's).
   */
  private async startConversation(turn: NewTurn): Promise<StartedTurn> {
    const assistant = await insertTurn(
      this.dataSource,
      `WITH conversation AS (INSERT INTO conversations (user_id, mode) VALUES ($8, $3) RETURNING id)
       ${TURN_MESSAGES('(SELECT id FROM conversation)')}`,
      turn,
      1,
      true,
      turn.userId,
    );
    return startedTurn(turn, assistant.conversation_id, assistant, true, true);
  }

  /** Takes back a turn nothing was enqueued for: its idempotency key, and its conversation when new, else its messages. */
  async discardTurn(turn: StartedTurn): Promise<void> {
    await this.dataSource.transaction(async (manager) => {
      await manager.query(`DELETE FROM idempotency_keys WHERE response->>'messageId' = $1`, [turn.messageId]);
      if (turn.isNew) {
        await manager.query('DELETE FROM conversations WHERE id = $1', [turn.conversationId]);
      } else {
        await manager.query(
          `DELETE FROM messages WHERE conversation_id = $1 AND turn = (SELECT turn FROM messages WHERE id = $2)`,
          [turn.conversationId, turn.messageId],
        );
      }
    });
  }

  /** The user's `limit` most recent deliberations (assistant messages), newest first. */
  async recent(userId: string, limit: number): Promise<RecentDeliberation[]> {
    const rows: {
      id: string;
      mode: ModeName;
      status: MessageStatus;
      created_at: Date;
      title: string | null;
      question: string | null;
    }[] = await this.dataSource.query(
      `SELECT m.id, m.mode, m.status, m.created_at, c.title,
         (SELECT left(u.content, 200) FROM messages u WHERE u.conversation_id = m.conversation_id
            AND u.turn = m.turn AND u.role = 'user') AS question
       FROM messages m JOIN conversations c ON c.id = m.conversation_id
       WHERE c.user_id = $1 AND m.role = 'assistant'
       ORDER BY m.created_at DESC, m.id DESC LIMIT $2`,
      [userId, limit],
    );
    return rows.map((r) => ({
      messageId: r.id,
      mode: r.mode,
      status: r.status,
      createdAt: new Date(r.created_at),
      title: r.title,
      question: r.question ?? '',
    }));
  }

  /** The assistant message `messageId` (a UUID), if its conversation is the user's. */
  async ownedMessage(userId: string, messageId: string): Promise<StoredMessage | null> {
    const [record]: StoredMessageRecord[] = await this.dataSource.query(
      `SELECT ${STORED_MESSAGE_COLUMNS} FROM messages m JOIN conversations c ON c.id = m.conversation_id
       WHERE m.id = $1 AND m.role = 'assistant' AND c.user_id = $2`,
      [messageId, userId],
    );
    return record ? toStoredMessage(record) : null;
  }

  /** A message's stage rows, in the order its mode reads them. */
  stageRows(messageId: string): Promise<StageRow[]> {
    return loadStageRows(this.dataSource, messageId);
  }

  /** The stage rows of several messages in one query, by message (messages without rows are absent). */
  async stageRowsOf(messageIds: string[]): Promise<Map<string, StageRow[]>> {
    const records: (StageRowRecord & { message_id: string })[] = await this.dataSource.query(
      `SELECT message_id, stage_type, stage_order, model, role, content, parsed_data, response_time_ms, prompt_tokens,
         completion_tokens, cost_usd, participant
       FROM deliberation_stages WHERE message_id = ANY($1) ORDER BY stage_order, participant NULLS FIRST, created_at, id`,
      [messageIds],
    );
    const byMessage = new Map<string, StageRow[]>();
    for (const record of records) {
      const rows = byMessage.get(record.message_id);
      if (rows) rows.push(toStageRow(record));
      else byMessage.set(record.message_id, [toStageRow(record)]);
    }
    return byMessage;
  }

  /** A message's model calls (the title's excepted), in the order they were stored. */
  async calls(messageId: string): Promise<CallSummary[]> {
    const rows: Omit<CallRecord, 'message_id' | 'call_key' | 'content'>[] = await this.dataSource.query(
      `SELECT stage, model, ok, error, finish_reason, response_time_ms, prompt_tokens, completion_tokens, cost_usd
       FROM model_calls WHERE message_id = $1 AND stage NOT IN ('title', 'unstored') ORDER BY created_at, stage, call_key`,
      [messageId],
    );
    return rows.map(toCallSummary);
  }

  /**
   * The calls of one stage with their answers and keys, in the order they were stored: what a
   * cancelled or failed deliberation kept of the stage it never committed (DeliberationView.partial).
   */
  async stageCalls(messageId: string, stage: string): Promise<StoredStageCall[]> {
    const rows: CallRecord[] = await this.dataSource.query(
      `SELECT message_id, stage, call_key, model, ok, content, error, finish_reason, response_time_ms,
         prompt_tokens, completion_tokens, cost_usd
       FROM model_calls WHERE message_id = $1 AND stage = $2 ORDER BY created_at, call_key`,
      [messageId, stage],
    );
    return rows.map(toStoredStageCall);
  }

  /**
   * The calls of several messages (titles excepted), by message, in the order they were stored;
   * answers only for the messages in `withContent` (the others' are null). One query however many.
   */
  async callsOf(
    messageIds: string[],
    withContent: string[] = [],
  ): Promise<Map<string, { summary: CallSummary; stored: StoredStageCall }[]>> {
    const rows: CallRecord[] = await this.dataSource.query(
      `SELECT message_id, stage, call_key, model, ok,
         CASE WHEN message_id = ANY($2::uuid[]) THEN content END AS content, error, finish_reason,
         response_time_ms, prompt_tokens, completion_tokens, cost_usd
       FROM model_calls WHERE message_id = ANY($1::uuid[]) AND stage NOT IN ('title', 'unstored')
       ORDER BY message_id, created_at, stage, call_key`,
      [messageIds, withContent],
    );
    const byMessage = new Map<string, { summary: CallSummary; stored: StoredStageCall }[]>();
    for (const row of rows) {
      const entry = { summary: toCallSummary(row), stored: toStoredStageCall(row) };
      const list = byMessage.get(row.message_id);
      if (list) list.push(entry);
      else byMessage.set(row.message_id, [entry]);
    }
    return byMessage;
  }

  /**
   * The calls each of these messages started, by message, in the order they started (their
   * `model_progress started` events): a call still running when its deliberation ended has no
   * stored outcome yet, only this. One query however many.
   */
  async startedCallsOf(messageIds: string[]): Promise<Map<string, StartedStageCall[]>> {
    const rows: { message_id: string; event_key: string; stage: string; participant: string | number }[] =
      messageIds.length === 0
        ? []
        : await this.dataSource.query(
            `SELECT message_id, event_key, payload->>'stage' AS stage, payload->'participant' AS participant
             FROM deliberation_events
             WHERE message_id = ANY($1::uuid[]) AND type = 'model_progress' AND payload->>'state' = 'started'
             ORDER BY message_id, seq`,
            [messageIds],
          );
    const byMessage = new Map<string, StartedStageCall[]>();
    for (const row of rows) {
      // event_key: `model_progress:<stage>:<call key>:started` (a call key may hold colons).
      const prefix = `model_progress:${row.stage}:`;
      if (!row.event_key.startsWith(prefix) || !row.event_key.endsWith(':started')) continue;
      const key = row.event_key.slice(prefix.length, -':started'.length);
      const started = { stage: row.stage, key, participant: row.participant };
      const list = byMessage.get(row.message_id);
      if (list) list.push(started);
      else byMessage.set(row.message_id, [started]);
    }
    return byMessage;
  }

  /** A message's status; null when it does not exist (any more). */
  async status(messageId: string): Promise<MessageStatus | null> {
    const [row]: { status: MessageStatus }[] = await this.dataSource.query(
      'SELECT status FROM messages WHERE id = $1',
      [messageId],
    );
    return row?.status ?? null;
  }

  /** The last event seq stored for each of these messages that still exists: one query however many. */
  async lastSeqs(messageIds: string[]): Promise<Map<string, number>> {
    const rows: { id: string; last_seq: number }[] = await this.dataSource.query(
      'SELECT id, last_seq FROM messages WHERE id = ANY($1::uuid[])',
      [messageIds],
    );
    return new Map(rows.map((row) => [row.id, row.last_seq]));
  }

  /** How many deliberations (assistant messages) are queued and running, across all users. */
  async activeCounts(): Promise<{ queued: number; running: number }> {
    const rows: { status: 'queued' | 'running'; n: number }[] = await this.dataSource.query(
      `SELECT status, count(*)::int AS n FROM messages
       WHERE role = 'assistant' AND status = ANY(conclave_open_statuses()) GROUP BY status`,
    );
    const count = (status: 'queued' | 'running') => rows.find((r) => r.status === status)?.n ?? 0;
    return { queued: count('queued'), running: count('running') };
  }
}
