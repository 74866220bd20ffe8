import type { MigrationInterface, QueryRunner } from 'typeorm';
import {
  createDefaultEventPartition,
  createEventPartition,
  listEventPartitions,
} from '../lifecycle/event-partitions';
import { missingPartitions, partitionsAhead, weekPartition } from '../lifecycle/plan';
import { STAGE_WRITE_FUNCTION } from './stage-write.function';

const LEGACY = 'deliberation_events_unpartitioned';

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
 * - conclave_stage_write writes the new column (stage-write.function.ts).
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
    await q.query(STAGE_WRITE_FUNCTION);
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
    await q.query(unpartitionedStageWrite());
  }
}

/** conclave_stage_write as 1763840000000 left it (events not partitioned). */
export function unpartitionedStageWrite(): string {
  const replacements: [string, string][] = [
    ['last_seq, created_at INTO m', 'last_seq INTO m'],
    [
      'd.message_id = p_message\n      AND d.message_created_at = m.created_at AND',
      'd.message_id = p_message AND',
    ],
    ['(message_id, message_created_at, seq,', '(message_id, seq,'],
    ['SELECT p_message, m.created_at, n.seq,', 'SELECT p_message, n.seq,'],
  ];
  return replacements.reduce((text, [from, to]) => {
    if (!text.includes(from)) throw new Error(`conclave_stage_write changed: "${from}" not found`);
    return text.replace(from, to);
  }, STAGE_WRITE_FUNCTION);
}
