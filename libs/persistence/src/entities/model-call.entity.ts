import { Column, CreateDateColumn, Entity, PrimaryGeneratedColumn } from 'typeorm';

/**
 * Every model call's outcome, stored as it settles: a stage retried after a crash reuses these
 * instead of calling the model again, and usage totals include calls that produced no stage row.
 */
@Entity('model_calls')
export class ModelCallEntity {
  @PrimaryGeneratedColumn('uuid')
  id: string;

  @Column({ name: 'message_id', type: 'uuid' })
  messageId: string;

  @Column({ type: 'text' })
  stage: string;

  @Column({ name: 'call_key', type: 'text' })
  callKey: string;

  @Column({ type: 'text' })
  model: string;

  @Column({ name: 'served_model', type: 'text', nullable: true })
  servedModel: string | null;

  @Column({ type: 'boolean' })
  ok: boolean;

  @Column({ type: 'text', nullable: true })
  content: string | null;

  @Column({ type: 'text', nullable: true })
  error: string | null;

  @Column({ name: 'response_time_ms', type: 'int' })
  responseTimeMs: number;

  @Column({ name: 'prompt_tokens', type: 'int', nullable: true })
  promptTokens: number | null;

  @Column({ name: 'completion_tokens', type: 'int', nullable: true })
  completionTokens: number | null;

  @Column({ name: 'cost_usd', type: 'numeric', nullable: true })
  costUsd: string | null;

  @Column({ type: 'boolean', default: false })
  simulated: boolean;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;
}
