import { Column, CreateDateColumn, Entity, PrimaryGeneratedColumn } from 'typeorm';

export type BatchStatus = 'queued' | 'running' | 'complete' | 'cancelled';

/** A batch of deliberations; its items are ordinary messages with `batch_id` and `batch_index`. */
@Entity('batches')
export class BatchEntity {
  @PrimaryGeneratedColumn('uuid')
  id: string;

  @Column({ name: 'user_id', type: 'uuid' })
  userId: string;

  @Column({ type: 'text', nullable: true })
  name: string | null;

  @Column({ type: 'text' })
  status: BatchStatus;

  @Column({ type: 'int' })
  total: number;

  @Column({ type: 'int' })
  concurrency: number;

  @Column({ name: 'generate_titles', type: 'boolean', default: false })
  generateTitles: boolean;

  @Column({ type: 'jsonb', nullable: true })
  defaults: Record<string, unknown> | null;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  @Column({ name: 'started_at', type: 'timestamptz', nullable: true })
  startedAt: Date | null;

  @Column({ name: 'finished_at', type: 'timestamptz', nullable: true })
  finishedAt: Date | null;

  @Column({ name: 'cancelled_at', type: 'timestamptz', nullable: true })
  cancelledAt: Date | null;
}
