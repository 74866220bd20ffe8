import { Column, CreateDateColumn, Entity, PrimaryGeneratedColumn, UpdateDateColumn } from 'typeorm';
import type { MessageRole, MessageStatus, ModeName } from '@conclave/contracts';

/**
 * 00-shared.md §5 plus what the engine needs: the turn it belongs to, the resolved mode config,
 * the stage in progress, whether it owes the conversation a title, and the last event seq.
 */
@Entity('messages')
export class MessageEntity {
  @PrimaryGeneratedColumn('uuid')
  id: string;

  @Column({ name: 'conversation_id', type: 'uuid' })
  conversationId: string;

  @Column({ type: 'text' })
  role: MessageRole;

  @Column({ type: 'text' })
  content: string;

  @Column({ type: 'text' })
  status: MessageStatus;

  @Column({ type: 'text', nullable: true })
  error: string | null;

  @Column({ type: 'int' })
  turn: number;

  @Column({ type: 'text' })
  mode: ModeName;

  @Column({ type: 'jsonb', nullable: true })
  config: Record<string, unknown> | null;

  @Column({ type: 'text', nullable: true })
  stage: string | null;

  @Column({ name: 'needs_title', type: 'boolean', default: false })
  needsTitle: boolean;

  @Column({ name: 'last_seq', type: 'int', default: 0 })
  lastSeq: number;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' })
  updatedAt: Date;

  @Column({ name: 'completed_at', type: 'timestamptz', nullable: true })
  completedAt: Date | null;

  @Column({ name: 'batch_id', type: 'uuid', nullable: true })
  batchId: string | null;

  @Column({ name: 'batch_index', type: 'int', nullable: true })
  batchIndex: number | null;

  /** When a batch item was handed to the queue; null while it waits for a slot of its batch. */
  @Column({ name: 'dispatched_at', type: 'timestamptz', nullable: true })
  dispatchedAt: Date | null;
}
