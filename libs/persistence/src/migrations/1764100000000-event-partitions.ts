import type { MigrationInterface, QueryRunner } from 'typeorm';
import {
  createDefaultEventPartition,
  createEventPartition,
  listEventPartitions,
} from '../lifecycle/event-partitions';
import { missingPartitions, partitionsAhead, weekPartition } from '../lifecycle/plan';
import { STAGE_WRITE_1763840000000 } from './1763840000000-call-finish-reason';

const LEGACY = 'deliberation_events_unpartitioned';

/**
 * conclave_stage_write as this migration replaced it (frozen: the text it ran; the live text is
 * libs/persistence/src/sql/stage-write.function.ts). It came in the same release as
 * 1764200000000, which runs the same text: besides the partition key it has that migration's
 * `titleOutcome` and `compact`.
 */
export const STAGE_WRITE_1764100000000 = `
CREATE OR REPLACE FUNCTION conclave_stage_write(p_message uuid, p jsonb) RETURNS jsonb
LANGUAGE plpgsql AS $fn$
DECLARE
  m record;
  v_outcomes jsonb := COALESCE(p->'outcomes', '[]'::jsonb);
  v_rows jsonb := COALESCE(p->'rows', '[]'::jsonb);
  v_events jsonb := COALESCE(p->'events', '[]'::jsonb);
  v_update jsonb := p->'update';
  v_compact boolean := COALESCE((p->>'compact')::boolean, false);
  v_inserted int;
  v_title text;
  v_delivered jsonb;
  v_count int;
  v_status text;
BEGIN
  SELECT id, conversation_id, status, stage, needs_title, last_seq, created_at INTO m
    FROM messages WHERE id = p_message FOR NO KEY UPDATE;
  IF NOT FOUND THEN
    RETURN jsonb_build_object('result', 'missing');
  END IF;

  IF jsonb_array_length(v_outcomes) > 0 THEN
    WITH stored AS (
      INSERT INTO model_calls (message_id, stage, call_key, model, served_model, ok, content, error,
        response_time_ms, prompt_tokens, completion_tokens, cost_usd, simulated, finish_reason)
      SELECT p_message, p->>'stage', o.call_key, o.model, o.served_model, o.ok, o.content, o.error,
        o.response_time_ms, o.prompt_tokens, o.completion_tokens, o.cost_usd, o.simulated, o.finish_reason
      FROM jsonb_to_recordset(v_outcomes) AS o(call_key text, model text, served_model text, ok boolean,
        content text, error text, response_time_ms int, prompt_tokens int, completion_tokens int,
        cost_usd numeric, simulated boolean, finish_reason text)
      ON CONFLICT DO NOTHING RETURNING 1)
    SELECT count(*) INTO v_inserted FROM stored;
    IF v_inserted < jsonb_array_length(v_outcomes) THEN
      RETURN jsonb_build_object('result', 'replaced', 'outcomes', (
        SELECT jsonb_agg(jsonb_build_object('call_key', c.call_key, 'model', c.model,
            'served_model', c.served_model, 'ok', c.ok, 'content', c.content, 'error', c.error,
            'response_time_ms', c.response_time_ms, 'prompt_tokens', c.prompt_tokens,
            'completion_tokens', c.completion_tokens, 'cost_usd', c.cost_usd, 'simulated', c.simulated,
            'finish_reason', c.finish_reason)
          ORDER BY o.ord)
        FROM jsonb_array_elements(v_outcomes) WITH ORDINALITY AS o(v, ord)
        JOIN model_calls c ON c.message_id = p_message AND c.stage = p->>'stage' AND c.call_key = o.v->>'call_key'));
    END IF;
  END IF;

  IF p ? 'titleOutcome' THEN
    INSERT INTO model_calls (message_id, stage, call_key, model, served_model, ok, content, error,
      response_time_ms, prompt_tokens, completion_tokens, cost_usd, simulated, finish_reason)
    SELECT p_message, 'title', o.call_key, o.model, o.served_model, o.ok, o.content, o.error,
      o.response_time_ms, o.prompt_tokens, o.completion_tokens, o.cost_usd, o.simulated, o.finish_reason
    FROM jsonb_to_record(p->'titleOutcome') AS o(call_key text, model text, served_model text, ok boolean,
      content text, error text, response_time_ms int, prompt_tokens int, completion_tokens int,
      cost_usd numeric, simulated boolean, finish_reason text)
    ON CONFLICT DO NOTHING;
  END IF;

  IF p ? 'conversationTitle' AND m.needs_title THEN
    UPDATE conversations SET title = COALESCE(title, p->>'conversationTitle') WHERE id = m.conversation_id;
  END IF;

  IF m.status IN ('complete', 'failed', 'cancelled')
     OR (COALESCE((p->>'guard')::boolean, false) AND m.stage IS DISTINCT FROM p->>'stage') THEN
    RETURN jsonb_build_object('result', 'skipped');
  END IF;

  IF jsonb_array_length(v_rows) > 0 THEN
    INSERT INTO deliberation_stages (message_id, stage_type, stage_order, model, role, content, parsed_data,
      response_time_ms, prompt_tokens, completion_tokens, cost_usd, participant)
    SELECT p_message, r.stage_type, r.stage_order, r.model, r.role, r.content, r.parsed_data, r.response_time_ms,
      r.prompt_tokens, r.completion_tokens, r.cost_usd, r.participant
    FROM ROWS FROM (jsonb_to_recordset(v_rows) AS (stage_type text, stage_order int, model text, role text,
      content text, parsed_data jsonb, response_time_ms int, prompt_tokens int, completion_tokens int,
      cost_usd numeric, participant int)) WITH ORDINALITY
      AS r(stage_type, stage_order, model, role, content, parsed_data, response_time_ms, prompt_tokens,
        completion_tokens, cost_usd, participant, ord)
    ORDER BY r.ord
    ON CONFLICT DO NOTHING;
  END IF;

  IF p ? 'title' AND m.needs_title THEN
    UPDATE conversations SET title = COALESCE(title, p->>'title') WHERE id = m.conversation_id
      RETURNING title INTO v_title;
    SELECT COALESCE(jsonb_agg(CASE WHEN e->>'type' = 'title_complete'
        THEN jsonb_set(e, '{payload,data,title}', to_jsonb(COALESCE(v_title, p->>'title'))) ELSE e END
        ORDER BY x.ord), '[]'::jsonb)
      INTO v_events FROM jsonb_array_elements(v_events) WITH ORDINALITY AS x(e, ord);
  ELSE
    SELECT COALESCE(jsonb_agg(e ORDER BY x.ord), '[]'::jsonb) INTO v_events
      FROM jsonb_array_elements(v_events) WITH ORDINALITY AS x(e, ord) WHERE e->>'type' <> 'title_complete';
  END IF;

  WITH input AS (
    SELECT e.key, e.type, e.payload, e.ord
    FROM ROWS FROM (jsonb_to_recordset(v_events) AS (key text, type text, payload jsonb)) WITH ORDINALITY
      AS e(key, type, payload, ord)),
  fresh AS (
    SELECT DISTINCT ON (i.key) i.* FROM input i
    WHERE NOT EXISTS (SELECT 1 FROM deliberation_events d WHERE d.message_id = p_message
      AND d.message_created_at = m.created_at AND d.event_key = i.key)
    ORDER BY i.key, i.ord),
  numbered AS (SELECT f.*, (m.last_seq + row_number() OVER (ORDER BY f.ord))::int AS seq FROM fresh f),
  inserted AS (
    INSERT INTO deliberation_events (message_id, message_created_at, seq, event_key, type, payload, created_at)
    SELECT p_message, m.created_at, n.seq, n.key, n.type, n.payload, clock_timestamp() FROM numbered n ORDER BY n.seq
    RETURNING message_id, seq, event_key, type, payload, created_at)
  SELECT COALESCE(CASE WHEN v_compact
      THEN jsonb_agg(jsonb_build_array(i.event_key, i.seq, i.created_at) ORDER BY i.seq)
      ELSE jsonb_agg(to_jsonb(i) - 'event_key' ORDER BY i.seq) END, '[]'::jsonb), count(*)
    INTO v_delivered, v_count
  FROM inserted i;

  v_status := COALESCE(v_update->>'status',
    CASE WHEN COALESCE((p->>'markRunning')::boolean, false) AND m.status = 'queued' THEN 'running' END);
  IF v_status IS NOT NULL OR v_update IS NOT NULL THEN
    UPDATE messages SET
      last_seq = m.last_seq + v_count,
      status = COALESCE(v_status, status),
      stage = CASE WHEN v_update ? 'stage' THEN v_update->>'stage' ELSE stage END,
      error = CASE WHEN v_update ? 'error' THEN v_update->>'error' ELSE error END,
      content = CASE WHEN v_update ? 'content' THEN v_update->>'content' ELSE content END,
      completed_at = CASE WHEN COALESCE((v_update->>'completed')::boolean, false) THEN now() ELSE completed_at END,
      updated_at = now()
    WHERE id = p_message;
    IF COALESCE((v_update->>'completed')::boolean, false) THEN
      UPDATE conversations SET updated_at = now() WHERE id = m.conversation_id;
    END IF;
  ELSIF v_count > 0 THEN
    UPDATE messages SET last_seq = m.last_seq + v_count WHERE id = p_message;
  END IF;

  IF v_compact THEN
    RETURN jsonb_build_object('result', 'written', 'events', v_delivered, 'title', COALESCE(v_title, p->>'title'));
  END IF;
  RETURN jsonb_build_object('result', 'written', 'events', v_delivered);
END
$fn$`;

/**
 * Issue 23, data lifecycle: `deliberation_events` becomes a table partitioned by week of its
 * message's creation (docs/OPERATIONS.md, "Data lifecycle"), so that retention returns whole
 * partitions to the operating system instead of leaving dead rows behind.
 *
 * - Each event carries its message's `created_at` as `message_created_at`, the partition key. The
 *   foreign key (message_id, message_created_at) → messages (id, created_at) keeps it equal to the
 *   message's, so the primary key (message_id, seq, message_created_at) and the unique
 *   (message_id, event_key, message_created_at) still allow one row per (message_id, seq) and per
 *   (message_id, event_key); and a message's events, its replay and its cascade delete all touch
 *   one partition.
 * - `uq_messages_created_id` (created_at, id) is the foreign key's target and lets retention find
 *   the messages of a week's range.
 * - The existing rows are copied into weekly partitions (one per week that has events, plus this
 *   week and PARTITION_WEEKS_AHEAD more) and a DEFAULT partition; the copy is counted and the
 *   migration fails (and rolls back) unless every row arrived.
 * - conclave_stage_write writes the new column (STAGE_WRITE_1764100000000, above).
 */
export class EventPartitions1764100000000 implements MigrationInterface {
  name = 'EventPartitions1764100000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query('CREATE UNIQUE INDEX uq_messages_created_id ON messages (created_at, id)');
    await q.query(`ALTER TABLE deliberation_events RENAME TO ${LEGACY}`);
    await q.query(`ALTER TABLE ${LEGACY} RENAME CONSTRAINT deliberation_events_pkey TO ${LEGACY}_pkey`);
    await q.query(`ALTER TABLE ${LEGACY} RENAME CONSTRAINT uq_deliberation_events_key TO ${LEGACY}_key`);
    await q.query(`CREATE TABLE deliberation_events (
      message_id uuid NOT NULL,
      seq int NOT NULL,
      event_key text NOT NULL,
      type text NOT NULL,
      payload jsonb NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      message_created_at timestamptz NOT NULL,
      CONSTRAINT deliberation_events_pkey PRIMARY KEY (message_id, seq, message_created_at),
      CONSTRAINT uq_deliberation_events_key UNIQUE (message_id, event_key, message_created_at),
      CONSTRAINT deliberation_events_message_fkey FOREIGN KEY (message_id, message_created_at)
        REFERENCES messages (id, created_at) ON DELETE CASCADE ON UPDATE CASCADE)
      PARTITION BY RANGE (message_created_at)`);
    await createDefaultEventPartition(q);

    const weeks: { at: Date }[] = await q.query(
      `SELECT DISTINCT date_trunc('week', m.created_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' AS at
       FROM ${LEGACY} e JOIN messages m ON m.id = e.message_id`,
    );
    const wanted = [...weeks.map((w) => weekPartition(new Date(w.at))), ...partitionsAhead(new Date())];
    const unique = wanted.filter((r, i) => wanted.findIndex((o) => o.name === r.name) === i);
    for (const range of missingPartitions(await listEventPartitions(q), unique)) {
      await createEventPartition(q, range);
    }

    const [{ before }]: { before: number }[] = await q.query(`SELECT count(*)::int AS before FROM ${LEGACY}`);
    const [{ copied }]: { copied: number }[] = await q.query(
      `WITH copied AS (
         INSERT INTO deliberation_events (message_id, seq, event_key, type, payload, created_at, message_created_at)
         SELECT e.message_id, e.seq, e.event_key, e.type, e.payload, e.created_at, m.created_at
         FROM ${LEGACY} e JOIN messages m ON m.id = e.message_id
         RETURNING 1)
       SELECT count(*)::int AS copied FROM copied`,
    );
    if (copied !== before) {
      throw new Error(`deliberation_events: ${before} rows to move, ${copied} moved; nothing was changed`);
    }
    await q.query(`DROP TABLE ${LEGACY}`);
    await q.query(STAGE_WRITE_1764100000000);
    await q.query('ANALYZE deliberation_events');
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE ${LEGACY} (
      message_id uuid NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
      seq int NOT NULL,
      event_key text NOT NULL,
      type text NOT NULL,
      payload jsonb NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (message_id, seq),
      CONSTRAINT ${LEGACY}_key UNIQUE (message_id, event_key))`);
    await q.query(
      `INSERT INTO ${LEGACY} (message_id, seq, event_key, type, payload, created_at)
       SELECT message_id, seq, event_key, type, payload, created_at FROM deliberation_events`,
    );
    await q.query('DROP TABLE deliberation_events');
    await q.query(`ALTER TABLE ${LEGACY} RENAME TO deliberation_events`);
    await q.query(
      `ALTER TABLE deliberation_events RENAME CONSTRAINT ${LEGACY}_pkey TO deliberation_events_pkey`,
    );
    await q.query(
      `ALTER TABLE deliberation_events RENAME CONSTRAINT ${LEGACY}_key TO uq_deliberation_events_key`,
    );
    await q.query(`ALTER TABLE deliberation_events RENAME CONSTRAINT ${LEGACY}_message_id_fkey
      TO deliberation_events_message_id_fkey`);
    await q.query('DROP INDEX uq_messages_created_id');
    // The function as it was before this migration: without the partition key.
    await q.query(STAGE_WRITE_1763840000000);
  }
}
