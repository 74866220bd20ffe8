import { Column, CreateDateColumn, Entity, PrimaryColumn } from 'typeorm';

/** Every event delivered for a message, by seq: the source of replay after a reconnect. */
@Entity('deliberation_events')
export class DeliberationEventEntity {
  @PrimaryColumn({ name: 'message_id', type: 'uuid' })
  messageId: string;

  @PrimaryColumn({ type: 'int' })
  seq: number;

  @Column({ name: 'event_key', type: 'text' })
  eventKey: string;

  @Column({ type: 'text' })
  type: string;

  @Column({ type: 'jsonb' })
  payload: Record<string, unknown>;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;
}
