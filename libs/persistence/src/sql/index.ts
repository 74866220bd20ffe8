import { MESSAGE_STATUSES_FUNCTIONS } from './message-statuses.function';
import { STAGE_WRITE_GROUP_FUNCTION } from './stage-write-group.function';
import { STAGE_WRITE_FUNCTION } from './stage-write.function';
import { STOP_CHANNEL, STOP_NOTICE_FUNCTION } from './stop-notices.function';

export {
  MESSAGE_STATUSES_FUNCTIONS,
  STAGE_WRITE_FUNCTION,
  STAGE_WRITE_GROUP_FUNCTION,
  STOP_CHANNEL,
  STOP_NOTICE_FUNCTION,
};

/**
 * The live text of every function the database has, in an order they can be created in.
 * Migrations never import these (they carry the texts they ran, frozen); a database the migrations
 * build must define exactly these functions (migrations/migrations.db-spec.ts).
 */
export const LIVE_FUNCTIONS: readonly string[] = [
  MESSAGE_STATUSES_FUNCTIONS,
  STAGE_WRITE_FUNCTION,
  STAGE_WRITE_GROUP_FUNCTION,
  STOP_NOTICE_FUNCTION,
];
