import { ApiKeyEntity } from './api-key.entity';
import { BatchEntity } from './batch.entity';
import { ConversationEntity } from './conversation.entity';
import { DeliberationEventEntity } from './deliberation-event.entity';
import { DeliberationStageEntity } from './deliberation-stage.entity';
import { MessageEntity } from './message.entity';
import { ModelCallEntity } from './model-call.entity';
import { UserEntity } from './user.entity';

export {
  ApiKeyEntity,
  BatchEntity,
  ConversationEntity,
  DeliberationEventEntity,
  DeliberationStageEntity,
  MessageEntity,
  ModelCallEntity,
  UserEntity,
};

export const ENTITIES = [
  UserEntity,
  ApiKeyEntity,
  ConversationEntity,
  MessageEntity,
  DeliberationStageEntity,
  ModelCallEntity,
  DeliberationEventEntity,
  BatchEntity,
];
