import { randomUUID } from 'node:crypto';
import type { EntityManager } from 'typeorm';

/** A batch item's first turn: its mode, the user message's text and what its config keeps. */
export interface ItemTurn {
  mode: string;
  content: string;
  /** The user message's config (JSON text), or null. */
  config: string | null;
}

/**
 * Opens one conversation per batch item (a new batch's, or a retry's) with its user message, turn 1
 * and complete: two bulk statements however many items (ten thousand are not twenty thousand
 * statements). Answers the conversations' ids, in the items' order.
 */
export async function insertItemConversations(
  manager: EntityManager,
  userId: string,
  items: readonly ItemTurn[],
): Promise<string[]> {
  const conversationIds = items.map(() => randomUUID());
  await manager.query(
    `INSERT INTO conversations (id, user_id, mode) SELECT c, $2, m FROM unnest($1::uuid[], $3::text[]) AS t(c, m)`,
    [conversationIds, userId, items.map((i) => i.mode)],
  );
  await manager.query(
    `INSERT INTO messages (conversation_id, role, content, status, turn, mode, config)
         SELECT c, 'user', q, 'complete', 1, m, cfg
         FROM unnest($1::uuid[], $2::text[], $3::text[], $4::jsonb[]) AS t(c, q, m, cfg)`,
    [conversationIds, items.map((i) => i.content), items.map((i) => i.mode), items.map((i) => i.config)],
  );
  return conversationIds;
}
