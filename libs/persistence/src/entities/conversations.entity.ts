import type { ModeName } from '@conclave/contracts';
import { EntitySchema } from 'typeorm';
import { cascadingReference, generatedId } from './columns';

/** A `conversations` row. */
export interface ConversationRecord {
  id: string;
  userId: string;
  title: string | null;
  mode: ModeName;
  createdAt: Date;
  updatedAt: Date;
}

export const ConversationEntity = new EntitySchema<ConversationRecord>({
  name: 'Conversation',
  tableName: 'conversations',
  columns: {
    id: generatedId('conversations'),
    userId: cascadingReference('conversations', 'user_id', 'User'),
    title: { type: 'text', nullable: true },
    mode: { type: 'text' },
    createdAt: { name: 'created_at', type: 'timestamptz', default: () => 'now()' },
    updatedAt: { name: 'updated_at', type: 'timestamptz', default: () => 'now()' },
  },
  // (user_id, updated_at DESC) in the database: an index's column order is not something TypeORM keeps.
  indices: [{ name: 'idx_conversations_user', columns: ['userId', 'updatedAt'] }],
});
