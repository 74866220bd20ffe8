import { EntitySchema } from 'typeorm';
import { cascadingReference, generatedId } from './columns';

/** A `model_calls` row: one call to a model, answered or failed, with what it cost. */
export interface ModelCallRecord {
  id: string;
  messageId: string;
  stage: string;
  callKey: string;
  model: string;
  servedModel: string | null;
  ok: boolean;
  content: string | null;
  error: string | null;
  responseTimeMs: number;
  promptTokens: number | null;
  completionTokens: number | null;
  costUsd: string | null;
  simulated: boolean;
  createdAt: Date;
  finishReason: string | null;
}

/** Written only by conclave_stage_write; read by the stage store, budgets and reports in SQL. */
export const ModelCallEntity = new EntitySchema<ModelCallRecord>({
  name: 'ModelCall',
  tableName: 'model_calls',
  columns: {
    id: generatedId('model_calls'),
    messageId: cascadingReference('model_calls', 'message_id', 'Message'),
    stage: { type: 'text' },
    callKey: { name: 'call_key', type: 'text' },
    model: { type: 'text' },
    servedModel: { name: 'served_model', type: 'text', nullable: true },
    ok: { type: 'boolean' },
    content: { type: 'text', nullable: true },
    error: { type: 'text', nullable: true },
    responseTimeMs: { name: 'response_time_ms', type: 'integer' },
    promptTokens: { name: 'prompt_tokens', type: 'integer', nullable: true },
    completionTokens: { name: 'completion_tokens', type: 'integer', nullable: true },
    costUsd: { name: 'cost_usd', type: 'numeric', nullable: true },
    simulated: { type: 'boolean', default: false },
    createdAt: { name: 'created_at', type: 'timestamptz', default: () => 'now()' },
    finishReason: { name: 'finish_reason', type: 'text', nullable: true },
  },
  uniques: [{ name: 'uq_model_calls_once', columns: ['messageId', 'stage', 'callKey'] }],
});
