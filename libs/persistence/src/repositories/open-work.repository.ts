import type { DataSource } from 'typeorm';

/** Whose queued and running work to find: some API keys', a user's (every key and none), or every revoked key's. */
export type WorkOwner = { keyIds: string[] } | { userId: string } | { revokedKeys: true };

/** A deliberation that has not ended, as a stop needs it. */
export interface OpenDeliberation {
  messageId: string;
  status: 'queued' | 'running';
  stage: string | null;
  batchId: string | null;
}

/** How many of the revoked keys' open deliberations or batches one reconciler pass takes at most. */
const SWEEP_LIMIT = 500;
/**
 * The sweep takes keys revoked at least this long ago: the revoking command cancels its keys' work
 * itself right after revoking them, and counts what it cancelled; the sweep is for what slipped
 * past it, and does not race it.
 */
const SWEEP_AFTER = `interval '1 second'`;

/**
 * The work someone still has queued or running: what revoking a key, or an admin's cancel of a
 * user's work, stops. Work started with a key records it (`api_key_id` on the assistant message
 * and on the batch); reads go through the partial indexes that hold only unfinished work.
 */
export class OpenWorkRepository {
  constructor(private readonly dataSource: DataSource) {}

  /** The batches that have not finished (queued, running, cancelled or out of budget with items still running). */
  async openBatches(owner: WorkOwner): Promise<string[]> {
    const [sql, params] =
      'keyIds' in owner
        ? [
            `SELECT id FROM batches WHERE api_key_id = ANY($1::uuid[]) AND api_key_id IS NOT NULL
               AND finished_at IS NULL ORDER BY created_at`,
            [owner.keyIds],
          ]
        : 'userId' in owner
          ? [
              `SELECT id FROM batches WHERE user_id = $1 AND finished_at IS NULL ORDER BY created_at`,
              [owner.userId],
            ]
          : [
              `SELECT b.id FROM batches b JOIN api_keys k ON k.id = b.api_key_id
               WHERE b.api_key_id IS NOT NULL AND b.finished_at IS NULL AND k.revoked_at < now() - ${SWEEP_AFTER}
               ORDER BY b.created_at LIMIT ${SWEEP_LIMIT}`,
              [],
            ];
    if ('keyIds' in owner && owner.keyIds.length === 0) return [];
    const rows: { id: string }[] = await this.dataSource.query(sql, params);
    return rows.map((row) => row.id);
  }

  /** The deliberations (assistant messages) still queued or running, oldest first. */
  async openDeliberations(owner: WorkOwner): Promise<OpenDeliberation[]> {
    const columns = 'm.id, m.status, m.stage, m.batch_id';
    const open = `m.status = ANY(conclave_open_statuses())`;
    const [sql, params] =
      'keyIds' in owner
        ? [
            `SELECT ${columns} FROM messages m
             WHERE m.api_key_id = ANY($1::uuid[]) AND m.api_key_id IS NOT NULL AND ${open}
             ORDER BY m.created_at`,
            [owner.keyIds],
          ]
        : 'userId' in owner
          ? [
              `SELECT ${columns} FROM messages m JOIN conversations c ON c.id = m.conversation_id
               WHERE c.user_id = $1 AND m.role = 'assistant' AND ${open} ORDER BY m.created_at`,
              [owner.userId],
            ]
          : [
              `SELECT ${columns} FROM messages m JOIN api_keys k ON k.id = m.api_key_id
               WHERE m.api_key_id IS NOT NULL AND ${open} AND k.revoked_at < now() - ${SWEEP_AFTER}
               ORDER BY m.created_at LIMIT ${SWEEP_LIMIT}`,
              [],
            ];
    if ('keyIds' in owner && owner.keyIds.length === 0) return [];
    const rows: {
      id: string;
      status: 'queued' | 'running';
      stage: string | null;
      batch_id: string | null;
    }[] = await this.dataSource.query(sql, params);
    return rows.map((r) => ({ messageId: r.id, status: r.status, stage: r.stage, batchId: r.batch_id }));
  }

  /** Which of these deliberations have been cancelled: one query however many. */
  async cancelledAmong(messageIds: string[]): Promise<string[]> {
    if (messageIds.length === 0) return [];
    const rows: { id: string }[] = await this.dataSource.query(
      `SELECT id FROM messages WHERE id = ANY($1::uuid[]) AND status = 'cancelled'`,
      [messageIds],
    );
    return rows.map((row) => row.id);
  }

  /** The user's id by name, or null. */
  async userIdByName(name: string): Promise<string | null> {
    const [row]: { id: string }[] = await this.dataSource.query('SELECT id FROM users WHERE name = $1', [
      name,
    ]);
    return row?.id ?? null;
  }
}
