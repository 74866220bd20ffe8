import type { MessageStatus, ModeName } from '@conclave/contracts';
import type { DataSource } from 'typeorm';
import { ConversationEntity, MessageEntity } from '../entities';
import { keepRemovedSpend } from './budgets.repository';
import {
  STORED_MESSAGE_COLUMNS,
  toStoredMessage,
  type StoredMessage,
  type StoredMessageRecord,
} from './deliberations.repository';

export interface Conversation {
  id: string;
  title: string | null;
  mode: ModeName;
  createdAt: Date;
  updatedAt: Date;
}

/** A conversation in the user's list: how many turns it has and how the last one stands. */
export interface ConversationSummary extends Conversation {
  turns: number;
  lastStatus: MessageStatus | null;
  /** The batch it is an item of (and that batch's name), if any. */
  batchId: string | null;
  batchName: string | null;
  /** The start of its first question (for jury, of the content), for a conversation without a title. */
  question: string | null;
}

/** How much of the first question the list carries. */
export const LIST_QUESTION_LENGTH = 160;

/** A running deliberation of a deleted conversation: its subscribers get one last event after `lastSeq`. */
export interface DeletedDeliberation {
  messageId: string;
  lastSeq: number;
}

/** The columns of a Conversation, in its order. */
const CONVERSATION = { id: true, title: true, mode: true, createdAt: true, updatedAt: true } as const;

/**
 * A user's conversations: the list, one with its messages, deletion. Ids given are UUIDs. The list
 * (three subqueries and a lateral join per row), `lastPanel`, `messages` and the spend kept on
 * deletion stay SQL.
 */
export class ConversationsRepository {
  constructor(private readonly dataSource: DataSource) {}

  private get conversations() {
    return this.dataSource.getRepository(ConversationEntity);
  }

  /** The user's 500 most recently updated conversations, most recent first. */
  async list(userId: string): Promise<ConversationSummary[]> {
    const rows: {
      id: string;
      title: string | null;
      mode: ModeName;
      created_at: Date;
      updated_at: Date;
      turns: number;
      last_status: MessageStatus | null;
      batch_id: string | null;
      batch_name: string | null;
      question: string | null;
    }[] = await this.dataSource.query(
      `SELECT c.id, c.title, c.mode, c.created_at, c.updated_at,
         (SELECT COUNT(*)::int FROM messages m WHERE m.conversation_id = c.id AND m.role = 'assistant') AS turns,
         (SELECT m.status FROM messages m WHERE m.conversation_id = c.id AND m.role = 'assistant'
            ORDER BY m.turn DESC LIMIT 1) AS last_status,
         (SELECT left(m.content, $2) FROM messages m WHERE m.conversation_id = c.id AND m.role = 'user'
            ORDER BY m.turn LIMIT 1) AS question,
         b.batch_id, b.batch_name
       FROM conversations c
       LEFT JOIN LATERAL (
         SELECT m.batch_id, bt.name AS batch_name FROM messages m JOIN batches bt ON bt.id = m.batch_id
         WHERE m.conversation_id = c.id AND m.batch_id IS NOT NULL LIMIT 1) b ON true
       WHERE c.user_id = $1 ORDER BY c.updated_at DESC LIMIT 500`,
      [userId, LIST_QUESTION_LENGTH],
    );
    return rows.map((r) => ({
      id: r.id,
      title: r.title,
      mode: r.mode,
      createdAt: r.created_at,
      updatedAt: r.updated_at,
      turns: r.turns,
      lastStatus: r.last_status,
      batchId: r.batch_id,
      batchName: r.batch_name,
      question: r.question,
    }));
  }

  /** The conversation, if it is the user's. */
  async owned(userId: string, conversationId: string): Promise<Conversation | null> {
    const row = await this.conversations.findOne({
      select: CONVERSATION,
      where: { id: conversationId, userId },
    });
    return row
      ? { id: row.id, title: row.title, mode: row.mode, createdAt: row.createdAt, updatedAt: row.updatedAt }
      : null;
  }

  /**
   * The user's conversation's mode and the config its last turn ran with (null config when it has
   * no turn yet), or null when the user has no such conversation.
   */
  async lastPanel(
    userId: string,
    conversationId: string,
  ): Promise<{ mode: ModeName; config: unknown } | null> {
    const [row]: { mode: ModeName; config: unknown }[] = await this.dataSource.query(
      `SELECT c.mode, (SELECT m.config FROM messages m WHERE m.conversation_id = c.id AND m.role = 'assistant'
                       ORDER BY m.turn DESC LIMIT 1) AS config
       FROM conversations c WHERE c.id = $1 AND c.user_id = $2`,
      [conversationId, userId],
    );
    return row ? { mode: row.mode, config: row.config } : null;
  }

  /** Its messages, both roles, turn by turn (the user's message first). */
  async messages(conversationId: string): Promise<StoredMessage[]> {
    const rows: StoredMessageRecord[] = await this.dataSource.query(
      `SELECT ${STORED_MESSAGE_COLUMNS} FROM messages m JOIN conversations c ON c.id = m.conversation_id
       WHERE m.conversation_id = $1 ORDER BY m.turn, m.role DESC`,
      [conversationId],
    );
    return rows.map(toStoredMessage);
  }

  /** The first turn's deliberation (its assistant message) of the user's conversation, if any. */
  async firstDeliberation(
    userId: string,
    conversationId: string,
  ): Promise<{ messageId: string; mode: ModeName } | null> {
    const row = await this.dataSource
      .getRepository(MessageEntity)
      .createQueryBuilder('m')
      .select(['m.id', 'm.mode'])
      .innerJoin(ConversationEntity.options.name, 'c', 'c.id = m.conversationId')
      .where('c.id = :conversationId AND c.userId = :userId', { conversationId, userId })
      .andWhere(`m.role = 'assistant'`)
      .orderBy('m.turn')
      .limit(1)
      .getOne();
    return row ? { messageId: row.id, mode: row.mode } : null;
  }

  /**
   * Deletes the user's conversation with everything stored for it; returns its deliberations that
   * were still queued or running, or null when the user has no such conversation.
   */
  delete(userId: string, conversationId: string): Promise<DeletedDeliberation[] | null> {
    return this.dataSource.transaction(async (manager) => {
      const unfinished = await manager
        .getRepository(MessageEntity)
        .createQueryBuilder('m')
        .select(['m.id', 'm.lastSeq'])
        .innerJoin(ConversationEntity.options.name, 'c', 'c.id = m.conversationId')
        .where('c.id = :conversationId AND c.userId = :userId', { conversationId, userId })
        .andWhere(`m.role = 'assistant' AND m.status = ANY(conclave_open_statuses())`)
        .getMany();
      // What its calls cost stays in the user's monthly spend (budgets).
      await keepRemovedSpend(manager, userId, conversationId);
      const { affected } = await manager.delete(ConversationEntity, { id: conversationId, userId });
      if (!affected) return null;
      return unfinished.map((m) => ({ messageId: m.id, lastSeq: m.lastSeq }));
    });
  }
}
