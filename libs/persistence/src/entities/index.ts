import { AdminSessionEntity } from './admin-sessions.entity';
import { ApiKeyEntity } from './api-keys.entity';
import { BatchEntity } from './batches.entity';
import { ConversationEntity } from './conversations.entity';
import { DeliberationEventEntity } from './deliberation-events.entity';
import { DeliberationStageEntity } from './deliberation-stages.entity';
import { IdempotencyKeyEntity } from './idempotency-keys.entity';
import { MessageEntity } from './messages.entity';
import { ModelCallEntity } from './model-calls.entity';
import { PresetEntity } from './presets.entity';
import { RemovedSpendEntity } from './removed-spend.entity';
import { UserEntity } from './users.entity';

export * from './admin-sessions.entity';
export * from './api-keys.entity';
export * from './batches.entity';
export * from './conversations.entity';
export * from './deliberation-events.entity';
export * from './deliberation-stages.entity';
export * from './idempotency-keys.entity';
export * from './messages.entity';
export * from './model-calls.entity';
export * from './presets.entity';
export * from './removed-spend.entity';
export * from './users.entity';

/**
 * Every table of the schema the migrations build (typeorm_migrations aside), as TypeORM entities:
 * entities.db-spec.ts checks that TypeORM's schema builder finds nothing to change between these
 * and a migrated database.
 */
export const ENTITIES = [
  UserEntity,
  ApiKeyEntity,
  AdminSessionEntity,
  IdempotencyKeyEntity,
  RemovedSpendEntity,
  PresetEntity,
  ConversationEntity,
  BatchEntity,
  MessageEntity,
  DeliberationStageEntity,
  ModelCallEntity,
  DeliberationEventEntity,
];
