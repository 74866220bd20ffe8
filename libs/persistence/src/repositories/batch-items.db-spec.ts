import { scratchDatabase, type ScratchDatabase } from '../../../../test/support/database';
import { ApiKeysRepository } from './api-keys.repository';
import { insertItemConversations } from './batch-items';

let scratch: ScratchDatabase;
beforeAll(async () => {
  scratch = await scratchDatabase({ prefix: 'conclave_bi', poolSize: 2 });
});
afterAll(async () => {
  await scratch?.drop();
});

describe('insertItemConversations', () => {
  it("opens a conversation per item with its complete user message, answering their ids in the items' order", async () => {
    const { db } = scratch;
    const { userId } = await new ApiKeysRepository(db).createUserWithKey('items', 'user');
    const ids = await db.transaction((manager) =>
      insertItemConversations(manager, userId, [
        { mode: 'council', content: 'one', config: null },
        { mode: 'vote', content: 'two', config: JSON.stringify({ question: 'Q' }) },
      ]),
    );
    expect(ids).toHaveLength(2);
    const rows: unknown[] = await db.query(
      `SELECT c.id, c.user_id, c.mode AS conversation_mode, m.role, m.content, m.status, m.turn, m.mode, m.config
       FROM conversations c JOIN messages m ON m.conversation_id = c.id WHERE c.user_id = $1 ORDER BY m.content`,
      [userId],
    );
    expect(rows).toEqual([
      {
        id: ids[0],
        user_id: userId,
        conversation_mode: 'council',
        role: 'user',
        content: 'one',
        status: 'complete',
        turn: 1,
        mode: 'council',
        config: null,
      },
      {
        id: ids[1],
        user_id: userId,
        conversation_mode: 'vote',
        role: 'user',
        content: 'two',
        status: 'complete',
        turn: 1,
        mode: 'vote',
        config: { question: 'Q' },
      },
    ]);
  });
});
