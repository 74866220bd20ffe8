import type { MigrationInterface, QueryRunner } from 'typeorm';

export class InitialSchema1763780000000 implements MigrationInterface {
  name = 'InitialSchema1763780000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE users (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      name text NOT NULL UNIQUE,
      created_at timestamptz NOT NULL DEFAULT now())`);
    await q.query(`CREATE TABLE api_keys (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      user_id uuid NOT NULL REFERENCES users(id) ON DELETE CASCADE,
      key_hash text NOT NULL UNIQUE,
      key_prefix text NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      revoked_at timestamptz NULL)`);
    await q.query(`CREATE TABLE conversations (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      user_id uuid NOT NULL REFERENCES users(id) ON DELETE CASCADE,
      title text NULL,
      mode text NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now())`);
    await q.query(`CREATE INDEX idx_conversations_user ON conversations(user_id, updated_at DESC)`);
    await q.query(`CREATE TABLE messages (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      conversation_id uuid NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
      role text NOT NULL CHECK (role IN ('user', 'assistant')),
      content text NOT NULL,
      status text NOT NULL CHECK (status IN ('queued', 'running', 'complete', 'failed', 'cancelled')),
      error text NULL,
      turn int NOT NULL,
      mode text NOT NULL,
      config jsonb NULL,
      stage text NULL,
      needs_title boolean NOT NULL DEFAULT false,
      last_seq int NOT NULL DEFAULT 0,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      completed_at timestamptz NULL,
      CONSTRAINT uq_messages_turn_role UNIQUE (conversation_id, turn, role))`);
    await q.query(`CREATE TABLE deliberation_stages (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      message_id uuid NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
      stage_type text NOT NULL,
      stage_order int NOT NULL,
      model text NULL,
      role text NULL,
      content text NOT NULL,
      parsed_data jsonb NULL,
      response_time_ms int NULL,
      prompt_tokens int NULL,
      completion_tokens int NULL,
      cost_usd numeric NULL,
      created_at timestamptz NOT NULL DEFAULT now())`);
    await q.query(
      `CREATE INDEX idx_deliberation_stages_message ON deliberation_stages(message_id, stage_order)`,
    );
    // One row per stage and participant, however often a job runs.
    await q.query(`CREATE UNIQUE INDEX uq_deliberation_stages_once ON deliberation_stages
      (message_id, stage_type, stage_order, COALESCE(model, ''), COALESCE(role, ''))`);
    await q.query(`CREATE TABLE model_calls (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      message_id uuid NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
      stage text NOT NULL,
      call_key text NOT NULL,
      model text NOT NULL,
      served_model text NULL,
      ok boolean NOT NULL,
      content text NULL,
      error text NULL,
      response_time_ms int NOT NULL,
      prompt_tokens int NULL,
      completion_tokens int NULL,
      cost_usd numeric NULL,
      simulated boolean NOT NULL DEFAULT false,
      created_at timestamptz NOT NULL DEFAULT now(),
      CONSTRAINT uq_model_calls_once UNIQUE (message_id, stage, call_key))`);
    await q.query(`CREATE TABLE deliberation_events (
      message_id uuid NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
      seq int NOT NULL,
      event_key text NOT NULL,
      type text NOT NULL,
      payload jsonb NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (message_id, seq),
      CONSTRAINT uq_deliberation_events_key UNIQUE (message_id, event_key))`);
  }

  async down(q: QueryRunner): Promise<void> {
    for (const table of [
      'deliberation_events',
      'model_calls',
      'deliberation_stages',
      'messages',
      'conversations',
      'api_keys',
      'users',
    ]) {
      await q.query(`DROP TABLE IF EXISTS ${table}`);
    }
  }
}
