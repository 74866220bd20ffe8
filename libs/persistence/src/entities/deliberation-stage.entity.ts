import { Column, CreateDateColumn, Entity, PrimaryGeneratedColumn } from 'typeorm';

/** One stored result of a stage (00-shared.md §5); each mode's rows are in its section G. */
@Entity('deliberation_stages')
export class DeliberationStageEntity {
  @PrimaryGeneratedColumn('uuid')
  id: string;

  @Column({ name: 'message_id', type: 'uuid' })
  messageId: string;

  @Column({ name: 'stage_type', type: 'text' })
  stageType: string;

  @Column({ name: 'stage_order', type: 'int' })
  stageOrder: number;

  @Column({ type: 'text', nullable: true })
  model: string | null;

  @Column({ type: 'text', nullable: true })
  role: string | null;

  @Column({ type: 'text' })
  content: string;

  /** Position in the mode's roster, where one model can take part twice (debate); else null. */
  @Column({ type: 'int', nullable: true })
  participant: number | null;

  @Column({ name: 'parsed_data', type: 'jsonb', nullable: true })
  parsedData: Record<string, unknown> | null;

  @Column({ name: 'response_time_ms', type: 'int', nullable: true })
  responseTimeMs: number | null;

  @Column({ name: 'prompt_tokens', type: 'int', nullable: true })
  promptTokens: number | null;

  @Column({ name: 'completion_tokens', type: 'int', nullable: true })
  completionTokens: number | null;

  @Column({ name: 'cost_usd', type: 'numeric', nullable: true })
  costUsd: string | null;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;
}
