import { ApiKeysRepository } from './api-keys.repository';
import { BatchesRepository } from './batches.repository';
import { ConversationsRepository } from './conversations.repository';
import { DeliberationsRepository } from './deliberations.repository';
import { IdempotencyRepository } from './idempotency.repository';
import { UsageRepository } from './usage.repository';

export { ApiKeysRepository, type ApiKeyOwner, type RevokeTarget, type UserRole } from './api-keys.repository';
export {
  BatchesRepository,
  type Batch,
  type BatchItem,
  type DispatchPick,
  type NewBatch,
  type NewBatchItem,
} from './batches.repository';
export {
  ConversationsRepository,
  type Conversation,
  type ConversationSummary,
  type DeletedDeliberation,
} from './conversations.repository';
export {
  DeliberationsRepository,
  type FollowUpState,
  type NewTurn,
  type StartedTurn,
  type StoredMessage,
} from './deliberations.repository';
export {
  IdempotencyRace,
  IdempotencyRepository,
  type IdempotencyKey,
  type StoredResponse,
} from './idempotency.repository';
export { UsageRepository } from './usage.repository';

/** Every repository: each is built from the DataSource alone (how PersistenceModule provides them). */
export const REPOSITORIES = [
  DeliberationsRepository,
  ConversationsRepository,
  BatchesRepository,
  ApiKeysRepository,
  UsageRepository,
  IdempotencyRepository,
] as const;
