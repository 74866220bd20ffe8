import type { MigrationInterface, QueryRunner } from 'typeorm';
import { STAGE_WRITE_1764800000000 } from './1764800000000-stage-write-loaded';

/**
 * conclave_stage_write answers a commit's `loaded` write asked `asSent` without the texts it was
 * sent: the `content` of a stage row or model outcome this very write inserted comes back as
 * `true` (a text column stores exactly the text sent, and the writer has it), every other row's
 * and outcome's as stored. Less for PostgreSQL to build and for the worker to parse (issue 35:
 * CPU per council must not rise). Without `asSent` the answer is 1764800000000's, so an engine
 * from before reads it as it did. Otherwise the same as 1764800000000's. Frozen: the text this
 * migration ran; the live text is libs/persistence/src/sql/stage-write.function.ts.
 */
export const STAGE_WRITE_1764900000000 = `
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
  v_from int;
  v_call_ids uuid[];
  v_title_call uuid;
  v_row_ids uuid[];
  v_as_sent boolean := COALESCE((p->>'asSent')::boolean, false);
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
      ON CONFLICT DO NOTHING RETURNING id)
    SELECT count(*), array_agg(id) INTO v_inserted, v_call_ids FROM stored;
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
    ON CONFLICT DO NOTHING RETURNING id INTO v_title_call;
  END IF;

  IF p ? 'conversationTitle' AND m.needs_title THEN
    UPDATE conversations SET title = COALESCE(title, p->>'conversationTitle') WHERE id = m.conversation_id;
  END IF;

  IF m.status = ANY(conclave_terminal_statuses())
     OR (COALESCE((p->>'guard')::boolean, false) AND m.stage IS DISTINCT FROM p->>'stage') THEN
    RETURN jsonb_build_object('result', 'skipped');
  END IF;

  IF jsonb_array_length(v_rows) > 0 THEN
    WITH stored AS (
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
      ON CONFLICT DO NOTHING RETURNING id)
    SELECT array_agg(id) INTO v_row_ids FROM stored;
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

  IF COALESCE((p->>'loaded')::boolean, false) THEN
    SELECT min((r->>'stage_order')::int) INTO v_from FROM jsonb_array_elements(v_rows) AS r;
    RETURN jsonb_build_object('result', 'written', 'events', v_delivered, 'title', COALESCE(v_title, p->>'title'),
      'from', v_from,
      'rows', (SELECT COALESCE(jsonb_agg(jsonb_build_array(s.stage_type, s.stage_order, s.model, s.role,
          CASE WHEN v_as_sent AND s.id = ANY(v_row_ids) THEN 'true'::jsonb ELSE to_jsonb(s.content) END, s.parsed_data,
          s.response_time_ms, s.prompt_tokens, s.completion_tokens, s.cost_usd, s.participant)
          ORDER BY s.stage_order, s.participant NULLS FIRST, s.created_at, s.id), '[]'::jsonb)
        FROM deliberation_stages s WHERE s.message_id = p_message AND s.stage_order >= v_from),
      'outcomes', (SELECT COALESCE(jsonb_agg(jsonb_build_array(c.stage, c.call_key, c.model, c.served_model,
          c.ok, CASE WHEN v_as_sent AND (c.id = ANY(v_call_ids) OR c.id = v_title_call) THEN 'true'::jsonb
            ELSE to_jsonb(c.content) END, c.error, c.response_time_ms, c.prompt_tokens, c.completion_tokens,
          c.cost_usd, c.simulated, c.finish_reason)
          ORDER BY c.created_at, c.id), '[]'::jsonb)
        FROM model_calls c WHERE c.message_id = p_message AND c.stage IN (p->>'stage', 'title')));
  END IF;
  IF v_compact THEN
    RETURN jsonb_build_object('result', 'written', 'events', v_delivered, 'title', COALESCE(v_title, p->>'title'));
  END IF;
  RETURN jsonb_build_object('result', 'written', 'events', v_delivered);
END
$fn$`;

export class StageWriteAsSent1764900000000 implements MigrationInterface {
  name = 'StageWriteAsSent1764900000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(STAGE_WRITE_1764900000000);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(STAGE_WRITE_1764800000000);
  }
}
