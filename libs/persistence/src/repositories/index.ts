import { AdminSessionsRepository } from './admin-sessions.repository';
import { ApiKeysRepository } from './api-keys.repository';
import { BatchesRepository } from './batches.repository';
import { BatchRetriesRepository } from './batch-retries.repository';
import { BudgetsRepository } from './budgets.repository';
import { ConversationsRepository } from './conversations.repository';
import { DeliberationsRepository } from './deliberations.repository';
import { IdempotencyRepository } from './idempotency.repository';
import { LifecycleRepository } from './lifecycle.repository';
import { OpenWorkRepository } from './open-work.repository';
import { PresetsRepository } from './presets.repository';
import { ReportsRepository } from './reports.repository';
import { UsageRepository } from './usage.repository';

export {
  AdminSessionsRepository,
  ADMIN_SESSION_PREFIX,
  ADMIN_SESSION_TTL_MS,
  type AdminSession,
} from './admin-sessions.repository';
export { ApiKeysRepository, type ApiKeyOwner, type RevokeTarget, type UserRole } from './api-keys.repository';
export { BatchRetriesRepository, type RetryOutcome } from './batch-retries.repository';
export { BudgetsRepository, keepRemovedSpend, type UserBudget } from './budgets.repository';
export {
  BatchesRepository,
  budgetCancelReason,
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
  type RecentDeliberation,
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
export { LifecycleRepository, removeConversations, type BatchDeletion } from './lifecycle.repository';
export { PresetsRepository, type NewPreset, type SavedPreset } from './presets.repository';
export { OpenWorkRepository, type OpenDeliberation, type WorkOwner } from './open-work.repository';
export { ReportsRepository, type ReportBatchShape, type ReportStageRecord } from './reports.repository';

/** Every repository: each is built from the DataSource alone (how PersistenceModule provides them). */
export const REPOSITORIES = [
  DeliberationsRepository,
  ConversationsRepository,
  BatchesRepository,
  ApiKeysRepository,
  UsageRepository,
  IdempotencyRepository,
  ReportsRepository,
  BudgetsRepository,
  BatchRetriesRepository,
  PresetsRepository,
  LifecycleRepository,
  OpenWorkRepository,
  AdminSessionsRepository,
] as const;
