import { EntitySchema } from 'typeorm';

/** A `deliberation_events` row: one stored event of a deliberation, by its seq. */
export interface DeliberationEventRecord {
  messageId: string;
  seq: number;
  eventKey: string;
  type: string;
  payload: Record<string, unknown>;
  createdAt: Date;
  /** The message's created_at: the partition key (a week per partition). */
  messageCreatedAt: Date;
}

/**
 * Partitioned by range of message_created_at (migration 1764100000000): TypeORM sees the parent
 * table only; the weekly partitions are made and dropped by the data lifecycle
 * (lifecycle/event-partitions.ts), never by TypeORM. Written only by conclave_stage_write and
 * read by the stage store in SQL of its own.
 */
export const DeliberationEventEntity = new EntitySchema<DeliberationEventRecord>({
  name: 'DeliberationEvent',
  tableName: 'deliberation_events',
  columns: {
    messageId: {
      name: 'message_id',
      type: 'uuid',
      primary: true,
      primaryKeyConstraintName: 'deliberation_events_pkey',
    },
    seq: { type: 'integer', primary: true, primaryKeyConstraintName: 'deliberation_events_pkey' },
    eventKey: { name: 'event_key', type: 'text' },
    type: { type: 'text' },
    payload: { type: 'jsonb' },
    createdAt: { name: 'created_at', type: 'timestamptz', default: () => 'now()' },
    messageCreatedAt: {
      name: 'message_created_at',
      type: 'timestamptz',
      primary: true,
      primaryKeyConstraintName: 'deliberation_events_pkey',
    },
  },
  uniques: [{ name: 'uq_deliberation_events_key', columns: ['messageId', 'eventKey', 'messageCreatedAt'] }],
  foreignKeys: [
    {
      name: 'deliberation_events_message_fkey',
      target: 'Message',
      columnNames: ['messageId', 'messageCreatedAt'],
      referencedColumnNames: ['id', 'createdAt'],
      onDelete: 'CASCADE',
      onUpdate: 'CASCADE',
    },
  ],
});
