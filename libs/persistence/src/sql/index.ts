import { STAGE_WRITE_GROUP_FUNCTION } from './stage-write-group.function';
import { STAGE_WRITE_FUNCTION } from './stage-write.function';

export { STAGE_WRITE_FUNCTION, STAGE_WRITE_GROUP_FUNCTION };

/**
 * The live text of every function the database has, by signature, in the order they can be
 * created. Migrations never import these (they carry the texts they ran, frozen); a database the
 * migrations build must define exactly these (migrations/migrations.spec.ts).
 */
export const LIVE_FUNCTIONS: Readonly<Record<string, string>> = {
  'conclave_stage_write(uuid,jsonb)': STAGE_WRITE_FUNCTION,
  'conclave_stage_write_group(jsonb)': STAGE_WRITE_GROUP_FUNCTION,
};
