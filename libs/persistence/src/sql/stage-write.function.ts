/**
 * conclave_stage_write(message uuid, p jsonb): the only writer of a stage, and the one place its
 * rules live. One write of a stage (its opening, calls that settled, its commit, the title job's
 * title, a final failure) in a single round trip. Under the message's row lock, in this order:
 * - store the calls' outcomes; when an earlier run of the stage stored one of them first, answer
 *   'replaced' with the stored outcomes of every given call (in the order given) and write nothing
 *   else: the engine reduces from them and writes again without outcomes;
 * - store the title call's outcome (`titleOutcome`, stage 'title'; kept when one is stored already)
 *   and set `conversationTitle` unless the conversation has a title (also after the message ended:
 *   a conversation keeps its title after a failed turn);
 * - stop with 'skipped' when the message has ended or, with a guard, is no longer at the stage;
 * - insert the stage rows (each once);
 * - fill the fallback `title` into a `title_complete` event (dropped when the conversation needs no
 *   title);
 * - append the events whose keys are new, numbered after `last_seq`;
 * - move the message (and the conversation's updated_at when the message ends).
 * Each statement of a PL/pgSQL function sees what was committed before it, so the checks made after
 * the lock see every earlier writer.
 *
 * p: { stage, guard?, markRunning?, outcomes?, rows?, events, update?: { status?, stage?, error?,
 *      content?, completed? }, title?, conversationTitle?, titleOutcome?, compact?, loaded?, asSent? }
 *
 * 'written' answers with the events appended: whole (message_id, seq, type, payload, created_at),
 * or with `compact` as [event_key, seq, created_at] and the title filled into `title_complete`
 * (`title`): the writer has the payloads already, so they need not travel back (1764200000000).
 * With `loaded` (a commit that moves the message on: 1764800000000) it is compact and also says
 * what it stored, as far as the write changed what a load reads (the LOAD_MESSAGE query of
 * deliberation.store.ts), in the load's order and jsonb key order: the message's stage rows from
 * the least stage_order among the rows given (`from`; null when none were given: no rows), and
 * the model outcomes (each with its `stage`) of the write's stage and of the title call; each row
 * and outcome compact, as an array of its columns in the load's order of them (STAGE_ROW_COLUMNS,
 * MODEL_CALL_COLUMNS in deliberation.store.ts). Rows of
 * an earlier stage_order come before those in a load, and other stages' outcomes are unchanged:
 * with what it loaded before, the worker has what a load would now return, and runs the next
 * stage from that instead of loading the message again. With `asSent` too (1764900000000), the
 * `content` of a row or outcome that this very write inserted is answered as `true` instead of
 * the text: a text column stores exactly the text sent, so the writer has it already and it need
 * not be built, sent and parsed again; a row or outcome stored before (an earlier run's, kept by
 * ON CONFLICT DO NOTHING, or an earlier write's) is answered with its stored text as before.
 *
 * This is the live text, its one home; no migration imports it. Each migration carries the text it
 * ran, frozen (1763820000000, 1763830000000, 1763840000000, 1764100000000, 1764200000000,
 * 1764600000000, 1764800000000, 1764900000000), and
 * migrations/migrations.db-spec.ts checks that a database the migrations build defines exactly this
 * text. To change the function: edit it here and add a migration with a frozen copy of the new
 * text. It stays compatible with older engines, which ignored the outcomes of 'replaced', never
 * sent conversationTitle and send no finish_reason, and with engines before 1764200000000, which
 * send neither titleOutcome nor compact.
 *
 * Events are partitioned by their message's creation time (1764100000000): each event carries it
 * as `message_created_at`, and the event-key check names it, so both touch one partition only.
 */
export const STAGE_WRITE_FUNCTION = `
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
