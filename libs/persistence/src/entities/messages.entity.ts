import { TERMINAL_STATUSES, type MessageStatus, type ModeName } from '@conclave/contracts';
import { EntitySchema } from 'typeorm';
import { cascadingReference, generatedId } from './columns';

/** A `messages` row: a turn's user message, or its assistant message (the deliberation). */
export interface MessageRecord {
  id: string;
  conversationId: string;
  role: 'user' | 'assistant';
  content: string;
  status: MessageStatus;
  error: string | null;
  turn: number;
  mode: ModeName;
  config: unknown;
  stage: string | null;
  needsTitle: boolean;
  lastSeq: number;
  createdAt: Date;
  updatedAt: Date;
  completedAt: Date | null;
  batchId: string | null;
  batchIndex: number | null;
  dispatchedAt: Date | null;
  attempt: number;
  supersededAt: Date | null;
  apiKeyId: string | null;
}

/** The statuses work still moves on from (conclave_open_statuses()); the others are TERMINAL_STATUSES. */
const OPEN_STATUSES: readonly MessageStatus[] = ['queued', 'running'];
const sqlList = (statuses: readonly string[]): string => statuses.map((s) => `'${s}'`).join(', ');

/**
 * Written by conclave_stage_write (the stage store) and the repositories' SQL. The trigger
 * `messages_stop_notice` and its function are not described here (TypeORM has no notion of them):
 * migrations.db-spec.ts checks the functions.
 */
export const MessageEntity = new EntitySchema<MessageRecord>({
  name: 'Message',
  tableName: 'messages',
  columns: {
    id: generatedId('messages'),
    conversationId: cascadingReference('messages', 'conversation_id', 'Conversation'),
    role: { type: 'text' },
    content: { type: 'text' },
    status: { type: 'text' },
    error: { type: 'text', nullable: true },
    turn: { type: 'integer' },
    mode: { type: 'text' },
    config: { type: 'jsonb', nullable: true },
    stage: { type: 'text', nullable: true },
    needsTitle: { name: 'needs_title', type: 'boolean', default: false },
    lastSeq: { name: 'last_seq', type: 'integer', default: 0 },
    createdAt: { name: 'created_at', type: 'timestamptz', default: () => 'now()' },
    updatedAt: { name: 'updated_at', type: 'timestamptz', default: () => 'now()' },
    completedAt: { name: 'completed_at', type: 'timestamptz', nullable: true },
    batchId: cascadingReference('messages', 'batch_id', 'Batch', { nullable: true }),
    batchIndex: { name: 'batch_index', type: 'integer', nullable: true },
    dispatchedAt: { name: 'dispatched_at', type: 'timestamptz', nullable: true },
    attempt: { type: 'integer', default: 1 },
    supersededAt: { name: 'superseded_at', type: 'timestamptz', nullable: true },
    // No foreign key: keys are revoked, never deleted (migration 1764450000000).
    apiKeyId: { name: 'api_key_id', type: 'uuid', nullable: true },
  },
  uniques: [{ name: 'uq_messages_turn_role', columns: ['conversationId', 'turn', 'role'] }],
  indices: [
    // What deliberation_events' foreign key (message_id, message_created_at) references.
    { name: 'uq_messages_created_id', columns: ['createdAt', 'id'], unique: true },
    {
      name: 'uq_messages_batch_item',
      columns: ['batchId', 'batchIndex', 'attempt'],
      unique: true,
      where: 'batch_id IS NOT NULL',
    },
    { name: 'idx_messages_batch_status', columns: ['batchId', 'status'], where: 'batch_id IS NOT NULL' },
    {
      name: 'idx_messages_open_by_key',
      columns: ['apiKeyId'],
      where: `api_key_id IS NOT NULL AND status IN (${sqlList(OPEN_STATUSES)})`,
    },
  ],
  checks: [
    { name: 'messages_role_check', expression: `role IN ('user', 'assistant')` },
    {
      name: 'messages_status_check',
      expression: `status IN (${sqlList([...OPEN_STATUSES, ...TERMINAL_STATUSES])})`,
    },
  ],
});
