import { randomUUID } from 'node:crypto';
import type { DataSource } from 'typeorm';
import { scratchDatabase, type ScratchDatabase } from '../../../../test/support/database';
import { FIRST_STAGE_START_MAX_CHARS } from '@conclave/contracts';
import { loadedFromStart } from '@conclave/deliberation';
import { TypeOrmDeliberationStore } from '../deliberation.store';
import { ApiKeysRepository } from './api-keys.repository';
import { BatchesRepository, type NewBatchItem } from './batches.repository';
import { ConversationsRepository } from './conversations.repository';
import { DeliberationsRepository, type NewTurn, type StartedTurn } from './deliberations.repository';
import { IdempotencyRace, IdempotencyRepository, type IdempotencyKey } from './idempotency.repository';
import { ReportsRepository } from './reports.repository';
import { UsageRepository } from './usage.repository';
import { sleep } from '../../../../test/support/wait';

let scratch: ScratchDatabase;
let db: DataSource;
let apiKeys: ApiKeysRepository;
let batches: BatchesRepository;
let conversations: ConversationsRepository;
let deliberations: DeliberationsRepository;
let idempotency: IdempotencyRepository;
let usage: UsageRepository;

beforeAll(async () => {
  scratch = await scratchDatabase({ prefix: 'conclave_r', poolSize: 4 });
  db = scratch.db;
  apiKeys = new ApiKeysRepository(db);
  batches = new BatchesRepository(db);
  conversations = new ConversationsRepository(db);
  deliberations = new DeliberationsRepository(db);
  idempotency = new IdempotencyRepository(db);
  usage = new UsageRepository(db);
});

afterAll(async () => {
  await scratch?.drop();
});

const newUser = async (role: 'user' | 'admin' = 'user') =>
  (await apiKeys.createUserWithKey(`u-${randomUUID()}`, role)).userId;

const turn = (userId: string, overrides: Partial<NewTurn> = {}): NewTurn => ({
  userId,
  mode: 'council',
  userContent: 'What is the best sorting algorithm?',
  config: { councilModels: ['sim/a', 'sim/b'], chairmanModel: 'sim/c' },
  firstStage: 'stage1',
  ...overrides,
});

const noFollowUps = () => {
  throw new Error('not a follow-up');
};

const keyOf = (userId: string, scope: IdempotencyKey['scope'] = 'deliberation'): IdempotencyKey => ({
  userId,
  scope,
  key: `k-${randomUUID()}`,
  requestHash: 'hash-1',
});

async function setStatus(messageId: string, status: string): Promise<void> {
  await db.query('UPDATE messages SET status = $2 WHERE id = $1', [messageId, status]);
}

async function insertCall(messageId: string, key: string, prompt: number, completion: number, cost: number) {
  await db.query(
    `INSERT INTO model_calls (message_id, stage, call_key, model, ok, content, response_time_ms, prompt_tokens,
       completion_tokens, cost_usd) VALUES ($1, 'stage1', $2, 'sim/a', true, 'x', 10, $3, $4, $5)`,
    [messageId, key, prompt, completion, cost],
  );
}

describe('ApiKeysRepository', () => {
  it('creates a user with a key, and finds the owner of the key in constant time', async () => {
    const name = `alice-${randomUUID()}`;
    const { userId, apiKey } = await apiKeys.createUserWithKey(name);
    expect(apiKey).toMatch(/^ck_[A-Za-z0-9_-]{43}$/);
    const owner = await apiKeys.ownerOf(apiKey);
    expect(owner).toEqual({ userId, keyId: expect.any(String) });
    // A second key for the same name is the same user.
    const second = await apiKeys.createUserWithKey(name);
    expect(second.userId).toBe(userId);
    expect((await apiKeys.ownerOf(second.apiKey))?.keyId).not.toBe(owner?.keyId);
  });

  it('refuses keys that are unknown, malformed or too long', async () => {
    const { apiKey } = await apiKeys.createUserWithKey(`bob-${randomUUID()}`);
    expect(await apiKeys.ownerOf(`${apiKey.slice(0, -1)}${apiKey.endsWith('A') ? 'B' : 'A'}`)).toBeNull();
    expect(await apiKeys.ownerOf(apiKey.slice(3))).toBeNull();
    expect(await apiKeys.ownerOf(`ck_${'x'.repeat(300)}`)).toBeNull();
  });

  it('raises a role, never lowers it', async () => {
    const name = `carol-${randomUUID()}`;
    const { userId } = await apiKeys.createUserWithKey(name, 'admin');
    expect(await apiKeys.isAdmin(userId)).toBe(true);
    await apiKeys.createUserWithKey(name, 'user');
    expect(await apiKeys.isAdmin(userId)).toBe(true);
    expect(await apiKeys.isAdmin(await newUser())).toBe(false);
    expect(await apiKeys.isAdmin(randomUUID())).toBe(false);
  });

  it('revokes by key, by prefix and by user, returning the ids it revoked', async () => {
    const name = `dave-${randomUUID()}`;
    const one = await apiKeys.createUserWithKey(name);
    const two = await apiKeys.createUserWithKey(name);
    const three = await apiKeys.createUserWithKey(name);
    const ids = await Promise.all(
      [one, two, three].map(async (k) => (await apiKeys.ownerOf(k.apiKey))!.keyId),
    );
    expect(await apiKeys.activeIds(ids)).toEqual(new Set(ids));

    expect(await apiKeys.revoke({ key: one.apiKey })).toEqual([ids[0]]);
    expect(await apiKeys.ownerOf(one.apiKey)).toBeNull();
    expect(await apiKeys.revoke({ key: one.apiKey })).toEqual([]);

    expect(await apiKeys.revoke({ prefix: two.apiKey.slice(0, 8) })).toEqual([ids[1]]);
    expect(await apiKeys.activeIds(ids)).toEqual(new Set([ids[2]]));

    expect(await apiKeys.revoke({ user: name })).toEqual([ids[2]]);
    expect(await apiKeys.activeIds(ids)).toEqual(new Set());
    expect(await apiKeys.activeIds([])).toEqual(new Set());
    expect(await apiKeys.revoke({ user: `nobody-${randomUUID()}` })).toEqual([]);
  });

  it('keeps one local admin user', async () => {
    const first = await apiKeys.ensureLocalUser();
    expect(await apiKeys.ensureLocalUser()).toBe(first);
    expect(await apiKeys.isAdmin(first)).toBe(true);
  });
});

describe('DeliberationsRepository', () => {
  it('starts a conversation: the user message, the queued assistant message owing a title', async () => {
    const userId = await newUser();
    const config = { councilModels: ['sim/a'], chairmanModel: 'sim/c', nested: { n: 1 } };
    const started = await deliberations.startTurn(turn(userId, { config }), null, noFollowUps);
    expect(started).toEqual({
      conversationId: expect.any(String),
      messageId: expect.any(String),
      isNew: true,
      start: expect.any(Object),
    });
    const message = await deliberations.ownedMessage(userId, started!.messageId);
    expect(message).toEqual({
      id: started!.messageId,
      conversationId: started!.conversationId,
      role: 'assistant',
      content: '',
      status: 'queued',
      error: null,
      turn: 1,
      mode: 'council',
      config,
      needsTitle: true,
      lastSeq: 0,
      createdAt: expect.any(Date),
      completedAt: null,
      title: null,
      stage: 'stage1',
      batchId: null,
    });
    expect(await deliberations.status(started!.messageId)).toBe('queued');
  });

  it("carries a new conversation's first stage: exactly what a load of the message returns", async () => {
    const userId = await newUser();
    const store = new TypeOrmDeliberationStore(db);
    // Keys jsonb orders otherwise, nested objects, unicode: the carried config reads as a load's.
    const config = {
      zeta: 1,
      councilModels: ['sim/a', 'sim/b'],
      chairmanModel: 'sim/c',
      a: { yy: [1, null], x: 'é' },
    };
    const started = (await deliberations.startTurn(turn(userId, { config }), null, noFollowUps))!;
    if (!started.start) throw new Error('no start carried');
    const carried = loadedFromStart(started.messageId, 'stage1', started.start);
    const loaded = await store.load(started.messageId, 10);
    expect(carried).toEqual(loaded);
    expect(JSON.stringify(carried)).toBe(JSON.stringify(loaded));
    // Through a job's JSON in Redis and back, as the worker receives it.
    expect(loadedFromStart(started.messageId, 'stage1', JSON.parse(JSON.stringify(started.start)))).toEqual(
      loaded,
    );
  });

  it("carries a graded turn's grading as a load reads it from the user message (issue 37)", async () => {
    const userId = await newUser();
    const store = new TypeOrmDeliberationStore(db);
    // Keys in an order jsonb changes: the carried grading still reads as the load's.
    const grading = {
      expected: 391,
      grader: {
        type: 'numeric' as const,
        relativeTolerance: 0.01,
        extract: 'auto' as const,
        absoluteTolerance: 0,
      },
    };
    const started = (await deliberations.startTurn(turn(userId, { grading }), null, noFollowUps))!;
    if (!started.start) throw new Error('no start carried');
    const loaded = await store.load(started.messageId, 10);
    expect(loaded).toMatchObject({ grading, expected: '391' });
    const carried = loadedFromStart(started.messageId, 'stage1', JSON.parse(JSON.stringify(started.start)));
    expect(carried).toEqual(loaded);
    expect(JSON.stringify(carried)).toBe(JSON.stringify(loaded));
    // An ungraded turn: neither field.
    const plain = (await deliberations.startTurn(turn(userId), null, noFollowUps))!;
    const ungraded = await store.load(plain.messageId, 10);
    expect(ungraded).not.toHaveProperty('grading');
    expect(ungraded).not.toHaveProperty('expected');
    expect(plain.start).not.toHaveProperty('grading');
  });

  it('stores a new conversation the same in one statement (no key) as in a transaction (with a key)', async () => {
    const userId = await newUser();
    const config = { councilModels: ['sim/a', 'sim/b'], chairmanModel: 'sim/c', z: { b: 1, a: 2 } };
    const plain = (await deliberations.startTurn(turn(userId, { config }), null, noFollowUps))!;
    const keyed = (await deliberations.startTurn(turn(userId, { config }), keyOf(userId), noFollowUps))!;
    const stored = async (started: StartedTurn) => {
      const [conversation] = await db.query(
        `SELECT user_id, mode, title, created_at = updated_at AS untouched FROM conversations WHERE id = $1`,
        [started.conversationId],
      );
      const messages = await db.query(
        `SELECT role, content, status, turn, mode, config::text AS config, stage, needs_title, last_seq,
           created_at = (SELECT created_at FROM conversations WHERE id = $1) AS with_conversation
         FROM messages WHERE conversation_id = $1 ORDER BY role DESC`,
        [started.conversationId],
      );
      return { conversation, messages };
    };
    expect(await stored(plain)).toEqual(await stored(keyed));
    expect((await stored(plain)).messages).toHaveLength(2);
    expect({ ...plain, conversationId: '', messageId: '' }).toEqual({
      ...keyed,
      conversationId: '',
      messageId: '',
      start: { ...keyed.start, conversationId: plain.conversationId, createdAt: plain.start?.createdAt },
    });
    expect(plain.start?.conversationId).toBe(plain.conversationId);
  });

  it("reads a subscription's replay: the events after a seq and whether the deliberation has ended", async () => {
    const userId = await newUser();
    const store = new TypeOrmDeliberationStore(db);
    const started = (await deliberations.startTurn(turn(userId), null, noFollowUps))!;
    const { messageId } = started;
    expect(await store.replayAfter(messageId, 0)).toEqual({ events: [], finished: false });
    const ev = (key: string) => ({ key, type: key, payload: { n: key } });
    await store.writeStage(messageId, { stage: 'stage1', events: [ev('a'), ev('b'), ev('c')] });
    const running = await store.replayAfter(messageId, 1);
    expect(running).toEqual({ events: await store.eventsAfter(messageId, 1), finished: false });
    expect(running.events.map((e) => [e.seq, e.type])).toEqual([
      [2, 'b'],
      [3, 'c'],
    ]);
    await store.writeStage(messageId, {
      stage: 'stage1',
      events: [{ key: 'complete', type: 'complete', payload: {} }],
      update: { status: 'complete', stage: null, content: 'Done', completed: true },
    });
    const ended = await store.replayAfter(messageId, 3);
    expect(ended).toEqual({
      events: [expect.objectContaining({ seq: 4, type: 'complete' })],
      finished: true,
    });
    // Past the last event of an ended deliberation, or a message that does not exist: finished.
    expect(await store.replayAfter(messageId, 4)).toEqual({ events: [], finished: true });
    expect(await store.replayAfter(randomUUID(), 0)).toEqual({ events: [], finished: true });
  });

  it("reads a subscription's replay only for the message's owner, in the same one statement", async () => {
    const owner = await newUser();
    const other = await newUser();
    const store = new TypeOrmDeliberationStore(db);
    const { messageId, conversationId } = (await deliberations.startTurn(turn(owner), null, noFollowUps))!;
    const ev = (key: string) => ({ key, type: key, payload: { n: key } });
    await store.writeStage(messageId, { stage: 'stage1', events: [ev('a'), ev('b')] });
    expect(await store.replayOwnedAfter(owner, messageId, 1)).toEqual(await store.replayAfter(messageId, 1));
    expect((await store.replayOwnedAfter(owner, messageId, 0))?.events.map((e) => e.seq)).toEqual([1, 2]);
    // Another user's, the question (a user message), or no message at all: refused, nothing read.
    expect(await store.replayOwnedAfter(other, messageId, 0)).toBeNull();
    const [question]: { id: string }[] = await db.query(
      `SELECT id FROM messages WHERE conversation_id = $1 AND role = 'user'`,
      [conversationId],
    );
    expect(await store.replayOwnedAfter(owner, question.id, 0)).toBeNull();
    expect(await store.replayOwnedAfter(owner, randomUUID(), 0)).toBeNull();
    await store.writeStage(messageId, {
      stage: 'stage1',
      events: [{ key: 'complete', type: 'complete', payload: {} }],
      update: { status: 'complete', stage: null, content: 'Done', completed: true },
    });
    expect(await store.replayOwnedAfter(owner, messageId, 2)).toEqual({
      events: [expect.objectContaining({ seq: 3, type: 'complete' })],
      finished: true,
    });
    expect(await store.replayOwnedAfter(owner, messageId, 3)).toEqual({ events: [], finished: true });
  });

  it('carries no start for a follow-up, an imported history, or a question too long to keep beside the job', async () => {
    const userId = await newUser();
    const first = (await deliberations.startTurn(turn(userId), null, noFollowUps))!;
    await setStatus(first.messageId, 'complete');
    const followUp = (await deliberations.startTurn(
      turn(userId, { conversationId: first.conversationId }),
      null,
      () => undefined,
    ))!;
    expect(followUp.start).toBeUndefined();
    const imported = (await deliberations.startTurn(
      turn(userId, { history: [{ question: 'Earlier?', answer: 'Yes.' }] }),
      null,
      noFollowUps,
    ))!;
    expect(imported.isNew).toBe(true);
    expect(imported.start).toBeUndefined();
    const long = (await deliberations.startTurn(
      turn(userId, { userContent: 'x'.repeat(FIRST_STAGE_START_MAX_CHARS) }),
      null,
      noFollowUps,
    ))!;
    expect(long.start).toBeUndefined();
  });

  it("lists a user's most recent deliberations, newest first, up to the limit, and no one else's", async () => {
    const userId = await newUser();
    const other = await newUser();
    const first = (await deliberations.startTurn(
      turn(userId, { userContent: 'First?' }),
      null,
      noFollowUps,
    ))!;
    const second = (await deliberations.startTurn(
      turn(userId, { userContent: 'Second?' }),
      null,
      noFollowUps,
    ))!;
    await deliberations.startTurn(turn(other, { userContent: 'Theirs?' }), null, noFollowUps);
    await db.query(`UPDATE conversations SET title = 'Named' WHERE id = $1`, [first.conversationId]);
    const recent = await deliberations.recent(userId, 10);
    expect(recent).toEqual([
      {
        messageId: second.messageId,
        mode: 'council',
        status: 'queued',
        createdAt: expect.any(Date),
        title: null,
        question: 'Second?',
      },
      {
        messageId: first.messageId,
        mode: 'council',
        status: 'queued',
        createdAt: expect.any(Date),
        title: 'Named',
        question: 'First?',
      },
    ]);
    expect((await deliberations.recent(userId, 1)).map((d) => d.messageId)).toEqual([second.messageId]);
  });

  it("gives the assistant message to its owner only, and never a user's message", async () => {
    const userId = await newUser();
    const started = (await deliberations.startTurn(turn(userId), null, noFollowUps))!;
    expect(await deliberations.ownedMessage(await newUser(), started.messageId)).toBeNull();
    const [user]: { id: string }[] = await db.query(
      `SELECT id FROM messages WHERE conversation_id = $1 AND role = 'user'`,
      [started.conversationId],
    );
    expect(await deliberations.ownedMessage(userId, user.id)).toBeNull();
    expect(await deliberations.ownedMessage(userId, randomUUID())).toBeNull();
  });

  it('admits a follow-up under the conversation lock, or rolls it back when refused', async () => {
    const userId = await newUser();
    const first = (await deliberations.startTurn(turn(userId), null, noFollowUps))!;
    const seen: unknown[] = [];
    const refused = deliberations.startTurn(
      turn(userId, { conversationId: first.conversationId }),
      null,
      (state) => {
        seen.push(state);
        throw new Error('still deliberating');
      },
    );
    await expect(refused).rejects.toThrow('still deliberating');
    expect(seen).toEqual([{ mode: 'council', lastTurn: 1, pending: 1 }]);
    expect((await conversations.messages(first.conversationId)).length).toBe(2);

    await setStatus(first.messageId, 'complete');
    const second = await deliberations.startTurn(
      turn(userId, { conversationId: first.conversationId, userContent: 'and then?' }),
      null,
      (state) => expect(state).toEqual({ mode: 'council', lastTurn: 1, pending: 0 }),
    );
    expect(second).toEqual({
      conversationId: first.conversationId,
      messageId: expect.any(String),
      isNew: false,
    });
    const message = await deliberations.ownedMessage(userId, second!.messageId);
    expect(message).toMatchObject({ turn: 2, needsTitle: false, status: 'queued' });
  });

  it("finds no conversation of another user's to follow up", async () => {
    const owner = await newUser();
    const first = (await deliberations.startTurn(turn(owner), null, noFollowUps))!;
    const other = await newUser();
    expect(
      await deliberations.startTurn(turn(other, { conversationId: first.conversationId }), null, noFollowUps),
    ).toBeNull();
    expect(
      await deliberations.startTurn(turn(other, { conversationId: randomUUID() }), null, noFollowUps),
    ).toBeNull();
  });

  it('discards a new conversation, or only the follow-up turn, with the idempotency key', async () => {
    const userId = await newUser();
    const key = keyOf(userId);
    const first = (await deliberations.startTurn(turn(userId), key, noFollowUps))!;
    expect(await idempotency.find(key)).not.toBeNull();
    await deliberations.discardTurn(first);
    expect(await idempotency.find(key)).toBeNull();
    expect(await conversations.owned(userId, first.conversationId)).toBeNull();

    const kept = (await deliberations.startTurn(turn(userId), null, noFollowUps))!;
    await setStatus(kept.messageId, 'complete');
    const followUp = (await deliberations.startTurn(
      turn(userId, { conversationId: kept.conversationId }),
      null,
      () => undefined,
    ))!;
    await deliberations.discardTurn(followUp);
    const left = await conversations.messages(kept.conversationId);
    expect(left.map((m) => [m.turn, m.role])).toEqual([
      [1, 'user'],
      [1, 'assistant'],
    ]);
  });

  it('reads stage rows in the order modes read them, for one message or several', async () => {
    const userId = await newUser();
    const a = (await deliberations.startTurn(turn(userId), null, noFollowUps))!;
    const b = (await deliberations.startTurn(turn(userId), null, noFollowUps))!;
    const insert = (
      messageId: string,
      order: number,
      model: string,
      participant: number | null,
      cost: number,
    ) =>
      db.query(
        `INSERT INTO deliberation_stages (message_id, stage_type, stage_order, model, role, content, parsed_data,
           response_time_ms, prompt_tokens, completion_tokens, cost_usd, participant)
         VALUES ($1, 'stage1', $2, $3, NULL, 'text', $4, 12, 3, 4, $5, $6)`,
        [messageId, order, model, { p: participant }, cost, participant],
      );
    await insert(a.messageId, 2, 'sim/late', null, 0.5);
    await insert(a.messageId, 1, 'sim/second', 1, 0.25);
    await insert(a.messageId, 1, 'sim/first', null, 0.125);
    await insert(b.messageId, 1, 'sim/only', 0, 1);

    const rows = await deliberations.stageRows(a.messageId);
    expect(rows.map((r) => r.model)).toEqual(['sim/first', 'sim/second', 'sim/late']);
    expect(rows[1]).toEqual({
      stageType: 'stage1',
      stageOrder: 1,
      model: 'sim/second',
      role: null,
      content: 'text',
      parsedData: { p: 1 },
      responseTimeMs: 12,
      promptTokens: 3,
      completionTokens: 4,
      costUsd: 0.25,
      participant: 1,
    });

    const byMessage = await deliberations.stageRowsOf([a.messageId, b.messageId, randomUUID()]);
    expect([...byMessage.keys()].sort()).toEqual([a.messageId, b.messageId].sort());
    expect(byMessage.get(a.messageId)).toEqual(rows);
    expect(byMessage.get(b.messageId)?.map((r) => r.model)).toEqual(['sim/only']);
    expect(await deliberations.stageRows(randomUUID())).toEqual([]);
  });

  it('reads the last event seq of the messages that exist, and the status of one', async () => {
    const userId = await newUser();
    const a = (await deliberations.startTurn(turn(userId), null, noFollowUps))!;
    await db.query('UPDATE messages SET last_seq = 7 WHERE id = $1', [a.messageId]);
    const gone = randomUUID();
    expect(await deliberations.lastSeqs([a.messageId, gone])).toEqual(new Map([[a.messageId, 7]]));
    expect(await deliberations.lastSeqs([])).toEqual(new Map());
    expect(await deliberations.status(gone)).toBeNull();
  });

  it('counts the queued and running deliberations', async () => {
    const before = await deliberations.activeCounts();
    const userId = await newUser();
    const a = (await deliberations.startTurn(turn(userId), null, noFollowUps))!;
    const b = (await deliberations.startTurn(turn(userId), null, noFollowUps))!;
    const c = (await deliberations.startTurn(turn(userId), null, noFollowUps))!;
    await setStatus(b.messageId, 'running');
    await setStatus(c.messageId, 'complete');
    expect(await deliberations.activeCounts()).toEqual({
      queued: before.queued + 1,
      running: before.running + 1,
    });
    expect(a.isNew).toBe(true);
  });
});

describe('IdempotencyRepository', () => {
  it("stores a turn's response with it; a twin with the same key rolls back", async () => {
    const userId = await newUser();
    const key = keyOf(userId);
    expect(await idempotency.find(key)).toBeNull();
    const started = (await deliberations.startTurn(turn(userId), key, noFollowUps))!;
    expect(await idempotency.find(key)).toEqual({
      requestHash: 'hash-1',
      response: { conversationId: started.conversationId, messageId: started.messageId },
    });
    await expect(deliberations.startTurn(turn(userId), key, noFollowUps)).rejects.toBeInstanceOf(
      IdempotencyRace,
    );
    expect(await conversations.list(userId)).toHaveLength(1);
    // Keys are per user and per scope.
    expect(await idempotency.find({ ...key, scope: 'batch' })).toBeNull();
    expect(await idempotency.find({ ...key, userId: await newUser() })).toBeNull();
  });
});

describe('ConversationsRepository', () => {
  it("lists the user's conversations, most recently updated first, with turns and the last status", async () => {
    const userId = await newUser();
    const a = (await deliberations.startTurn(turn(userId), null, noFollowUps))!;
    await setStatus(a.messageId, 'complete');
    await deliberations.startTurn(turn(userId, { conversationId: a.conversationId }), null, () => undefined);
    const b = (await deliberations.startTurn(turn(userId, { mode: 'vote' }), null, noFollowUps))!;
    await setStatus(b.messageId, 'failed');
    await db.query(
      `UPDATE conversations SET title = 'Sorting', updated_at = now() + interval '1 minute' WHERE id = $1`,
      [a.conversationId],
    );
    await deliberations.startTurn(turn(await newUser()), null, noFollowUps);

    const list = await conversations.list(userId);
    expect(list).toEqual([
      {
        id: a.conversationId,
        title: 'Sorting',
        mode: 'council',
        createdAt: expect.any(Date),
        updatedAt: expect.any(Date),
        turns: 2,
        lastStatus: 'queued',
        batchId: null,
        batchName: null,
        question: 'What is the best sorting algorithm?',
      },
      {
        id: b.conversationId,
        title: null,
        mode: 'vote',
        createdAt: expect.any(Date),
        updatedAt: expect.any(Date),
        turns: 1,
        lastStatus: 'failed',
        batchId: null,
        batchName: null,
        question: 'What is the best sorting algorithm?',
      },
    ]);
    expect(await conversations.list(await newUser())).toEqual([]);
  });

  it("reads one of the user's conversations with its messages, turn by turn", async () => {
    const userId = await newUser();
    const a = (await deliberations.startTurn(turn(userId), null, noFollowUps))!;
    await setStatus(a.messageId, 'complete');
    await deliberations.startTurn(
      turn(userId, { conversationId: a.conversationId, userContent: 'second' }),
      null,
      () => undefined,
    );
    await db.query(`UPDATE conversations SET title = 'T' WHERE id = $1`, [a.conversationId]);

    expect(await conversations.owned(userId, a.conversationId)).toEqual({
      id: a.conversationId,
      title: 'T',
      mode: 'council',
      createdAt: expect.any(Date),
      updatedAt: expect.any(Date),
    });
    expect(await conversations.owned(await newUser(), a.conversationId)).toBeNull();
    const messages = await conversations.messages(a.conversationId);
    expect(messages.map((m) => [m.turn, m.role, m.content, m.status, m.title])).toEqual([
      [1, 'user', 'What is the best sorting algorithm?', 'complete', 'T'],
      [1, 'assistant', '', 'complete', 'T'],
      [2, 'user', 'second', 'complete', 'T'],
      [2, 'assistant', '', 'queued', 'T'],
    ]);
  });

  it('deletes a conversation of the user, returning its unfinished deliberations', async () => {
    const userId = await newUser();
    const a = (await deliberations.startTurn(turn(userId), null, noFollowUps))!;
    await db.query('UPDATE messages SET last_seq = 4 WHERE id = $1', [a.messageId]);
    expect(await conversations.delete(await newUser(), a.conversationId)).toBeNull();
    expect(await conversations.delete(userId, a.conversationId)).toEqual([
      { messageId: a.messageId, lastSeq: 4 },
    ]);
    expect(await conversations.owned(userId, a.conversationId)).toBeNull();
    expect(await deliberations.status(a.messageId)).toBeNull();
    expect(await conversations.delete(userId, a.conversationId)).toBeNull();

    const done = (await deliberations.startTurn(turn(userId), null, noFollowUps))!;
    await setStatus(done.messageId, 'complete');
    expect(await conversations.delete(userId, done.conversationId)).toEqual([]);
  });
});

describe('BatchesRepository', () => {
  const item = (question: string, mode: NewBatchItem['mode'] = 'council'): NewBatchItem => ({
    mode,
    userContent: question,
    config: { q: question },
    firstStage: 'stage1',
  });

  const newBatch = (userId: string, items: NewBatchItem[], concurrency = 2) =>
    batches.create(
      { userId, name: 'nightly', concurrency, generateTitles: false, defaults: { mode: 'council' }, items },
      null,
    );

  it('stores a batch with one conversation per item, and reads it back', async () => {
    const userId = await newUser();
    const batchId = await newBatch(userId, [item('one'), item('two', 'vote'), item('three')]);
    const batch = await batches.owned(userId, batchId);
    expect(batch).toEqual({
      id: batchId,
      name: 'nightly',
      status: 'queued',
      total: 3,
      concurrency: 2,
      createdAt: expect.any(Date),
      startedAt: null,
      finishedAt: null,
      maxCostUsd: null,
    });
    expect(await batches.find(batchId)).toEqual(batch);
    expect(await batches.owned(await newUser(), batchId)).toBeNull();
    expect(await batches.find(randomUUID())).toBeNull();
    expect(await batches.itemCounts(batchId)).toEqual({ queued: 3 });
    expect((await batches.unfinishedItems(batchId)).map((i) => i.stage)).toEqual([
      'stage1',
      'stage1',
      'stage1',
    ]);
    expect(await batches.activeCount(userId)).toBe(1);
    expect((await conversations.list(userId)).length).toBe(3);

    const page = await batches.itemsPage(batchId, -1, 2);
    expect(page).toEqual([
      {
        index: 0,
        messageId: expect.any(String),
        conversationId: expect.any(String),
        mode: 'council',
        status: 'queued',
        error: null,
        config: { q: 'one' },
        question: 'one',
        attempt: 1,
        key: null,
        reference: null,
      },
      expect.objectContaining({ index: 1, mode: 'vote', question: 'two', config: { q: 'two' } }),
    ]);
    expect((await batches.itemsPage(batchId, 1, 2)).map((i) => i.question)).toEqual(['three']);
    expect(await deliberations.ownedMessage(userId, page[0].messageId)).toMatchObject({
      batchId,
      stage: 'stage1',
    });
    expect(await batches.itemsPage(batchId, 2, 2)).toEqual([]);
  });

  it("lists the user's batches, newest first", async () => {
    const userId = await newUser();
    const first = await newBatch(userId, [item('a')]);
    const second = await newBatch(userId, [item('b')]);
    await db.query(`UPDATE batches SET created_at = now() - interval '1 hour' WHERE id = $1`, [first]);
    expect((await batches.list(userId)).map((b) => b.id)).toEqual([second, first]);
    expect(await batches.list(await newUser())).toEqual([]);
  });

  it("stores the response of the batch's idempotency key; a twin rolls back", async () => {
    const userId = await newUser();
    const key = keyOf(userId, 'batch');
    const input = {
      userId,
      name: null,
      concurrency: 1,
      generateTitles: true,
      defaults: {},
      items: [item('x'), item('y')],
    };
    const batchId = await batches.create(input, key);
    expect(await idempotency.find(key)).toEqual({
      requestHash: 'hash-1',
      response: { batchId, total: 2, status: 'queued' },
    });
    await expect(batches.create(input, key)).rejects.toBeInstanceOf(IdempotencyRace);
    expect((await batches.list(userId)).map((b) => b.id)).toEqual([batchId]);
    expect((await conversations.list(userId)).length).toBe(2);
  });

  it('picks items up to the concurrency in submission order, then closes the batch when all ended', async () => {
    const userId = await newUser();
    const batchId = await newBatch(userId, [item('1'), item('2'), item('3')], 2);
    const items = await batches.itemsPage(batchId, -1, 10);

    // The first two in submission order (RETURNING gives them in no particular order).
    const first = await batches.pickItems(batchId);
    expect(first?.items).toHaveLength(2);
    expect(first?.items).toEqual(
      expect.arrayContaining(items.slice(0, 2).map((i) => ({ messageId: i.messageId, stage: 'stage1' }))),
    );
    const running = await batches.find(batchId);
    expect(running?.status).toBe('running');
    expect(running?.startedAt).toBeInstanceOf(Date);
    expect(await batches.pickItems(batchId)).toEqual({ items: [] });

    await setStatus(items[0].messageId, 'complete');
    await batches.closeIfDone(batchId);
    expect((await batches.find(batchId))?.status).toBe('running');
    expect((await batches.pickItems(batchId))?.items).toEqual([
      { messageId: items[2].messageId, stage: 'stage1' },
    ]);

    await setStatus(items[1].messageId, 'complete');
    await setStatus(items[2].messageId, 'failed');
    await batches.closeIfDone(batchId);
    const done = await batches.find(batchId);
    expect(done?.status).toBe('complete');
    expect(done?.finishedAt).toBeInstanceOf(Date);
    expect(await batches.pickItems(batchId)).toBeNull();
    expect(await batches.pickItems(randomUUID())).toBeNull();
    expect(await batches.openBatchIds()).not.toContain(batchId);
    expect(await batches.itemCounts(batchId)).toEqual({ complete: 2, failed: 1 });
  });

  it('cancels a batch: its queued items stop, its running ones finish, it stays cancelled', async () => {
    const userId = await newUser();
    const batchId = await newBatch(userId, [item('1'), item('2'), item('3')], 1);
    expect(await batches.openBatchIds()).toContain(batchId);
    const [picked] = (await batches.pickItems(batchId))!.items;
    await setStatus(picked.messageId, 'running');

    await batches.markCancelled(batchId);
    expect((await batches.find(batchId))?.status).toBe('cancelled');
    expect(await batches.pickItems(batchId)).toBeNull();
    const announced = await batches.cancelQueuedItems(batchId, 'The batch was cancelled.');
    expect(await batches.queuedItemCount(batchId)).toBe(0);
    expect(await batches.cancelQueuedItems(batchId, 'The batch was cancelled.')).toEqual([]);
    const cancelled = (await batches.itemsPage(batchId, -1, 10)).filter((i) => i.status === 'cancelled');
    expect(cancelled.map((i) => i.error)).toEqual(['The batch was cancelled.', 'The batch was cancelled.']);
    // Each ends as a stop ends a deliberation: its stored `cancelled { reason }`, returned to publish.
    expect(announced).toHaveLength(2);
    expect(new Set(announced.map((e) => e.messageId))).toEqual(new Set(cancelled.map((i) => i.messageId)));
    for (const event of announced) {
      expect(event).toMatchObject({ type: 'cancelled', seq: 1, reason: 'The batch was cancelled.' });
      const replayed = await new TypeOrmDeliberationStore(db).replayAfter(event.messageId, 0);
      expect(replayed).toEqual({ events: [event], finished: true });
    }
    // The running item is left to the cancel's ending write, with the stage it is at.
    expect(await batches.unfinishedItems(batchId)).toEqual([
      { messageId: picked.messageId, stage: 'stage1' },
    ]);
    expect(await batches.unfinishedItems(randomUUID())).toEqual([]);

    await batches.closeIfDone(batchId);
    expect((await batches.find(batchId))?.finishedAt).toBeNull();
    await setStatus(picked.messageId, 'complete');
    await batches.closeIfDone(batchId);
    const ended = await batches.find(batchId);
    expect(ended?.status).toBe('cancelled');
    expect(ended?.finishedAt).toBeInstanceOf(Date);
    expect(await batches.activeCount(userId)).toBe(0);
  });

  it('a spent budget ends the items it had not started, except one a stop ended while it waited', async () => {
    const userId = await newUser();
    const batchId = await batches.create(
      {
        userId,
        name: 'budgeted',
        concurrency: 1,
        generateTitles: false,
        defaults: { mode: 'council' },
        items: [item('1'), item('2'), item('3')],
        maxCostUsd: 0.01,
      },
      null,
    );
    const [picked] = (await batches.pickItems(batchId))!.items;
    await insertCall(picked.messageId, 'a', 10, 20, 0.02);
    const [, second, third] = await batches.itemsPage(batchId, -1, 10);

    // A user's stop of the third item, as its ending write does it, holds the row while the next
    // dispatch finds the budget spent and waits for that row.
    const stop = db.createQueryRunner();
    await stop.connect();
    try {
      await stop.startTransaction();
      await stop.query(
        `UPDATE messages SET status = 'cancelled', error = 'Cancelled by the user.', stage = NULL,
           completed_at = now(), last_seq = last_seq + 1 WHERE id = $1`,
        [third.messageId],
      );
      await stop.query(
        `INSERT INTO deliberation_events (message_id, message_created_at, seq, event_key, type, payload, created_at)
         SELECT id, created_at, last_seq, 'cancelled', 'cancelled', '{"reason": "Cancelled by the user."}', now()
         FROM messages WHERE id = $1`,
        [third.messageId],
      );
      const dispatch = batches.pickItems(batchId);
      for (let waited = 0; ; waited += 20) {
        const [{ n }]: { n: number }[] = await db.query(
          `SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%WITH ended AS%'`,
        );
        if (n > 0) break;
        if (waited > 10_000) throw new Error('the dispatch never waited for the stopped row');
        await sleep(20);
      }
      await stop.commitTransaction();
      const outcome = await dispatch;
      // The stopped item keeps its own end; only the second is ended by the budget.
      expect(outcome?.items).toEqual([]);
      expect(outcome?.cancelled?.map((e) => e.messageId)).toEqual([second.messageId]);
    } finally {
      await stop.release();
    }
    const stored = new TypeOrmDeliberationStore(db);
    expect((await stored.replayAfter(third.messageId, 0)).events).toEqual([
      expect.objectContaining({ type: 'cancelled', seq: 1, reason: 'Cancelled by the user.' }),
    ]);
    expect((await stored.replayAfter(second.messageId, 0)).events).toEqual([
      expect.objectContaining({
        type: 'cancelled',
        seq: 1,
        reason: expect.stringMatching(/budget of \$0\.01/),
      }),
    ]);
    expect((await batches.find(batchId))?.status).toBe('budget_exhausted');
  });
});

describe('ReportsRepository: what the long-format export reads', () => {
  it('every attempt with its duration as usage measures it, and each attempt’s calls without text', async () => {
    const userId = await newUser();
    const reports = new ReportsRepository(db);
    const batchId = await batches.create(
      {
        userId,
        name: 'long',
        concurrency: 1,
        generateTitles: false,
        defaults: { mode: 'council' },
        items: ['one', 'two'].map((q) => ({
          mode: 'council',
          userContent: q,
          config: { q },
          firstStage: 'stage1',
        })),
      },
      null,
    );
    const [first] = (await batches.pickItems(batchId))!.items;
    await insertCall(first.messageId, 'b', 3, 4, 0.25);
    await insertCall(first.messageId, 'a', 1, 2, 0.5);
    await db.query(
      `UPDATE messages SET status = 'complete', completed_at = dispatched_at + interval '1.5 seconds' WHERE id = $1`,
      [first.messageId],
    );
    const attempts = await reports.attemptsOf(batchId, 0, 1);
    expect(attempts).toEqual([
      expect.objectContaining({
        index: 0,
        messageId: first.messageId,
        attempt: 1,
        latest: true,
        status: 'complete',
        dispatchedAt: expect.any(String),
        completedAt: expect.any(String),
        durationMs: 1500,
      }),
      expect.objectContaining({ index: 1, status: 'queued', dispatchedAt: null, durationMs: null }),
    ]);
    expect(await reports.attemptsOf(batchId, 1, 1)).toHaveLength(1);
    const calls = await reports.callsOf(attempts.map((a) => a.messageId));
    expect(calls.get(attempts[1].messageId)).toBeUndefined();
    expect(calls.get(first.messageId)).toEqual(
      ['b', 'a'].map((key) =>
        expect.objectContaining({
          messageId: first.messageId,
          callKey: key,
          stage: 'stage1',
          model: 'sim/a',
          ok: true,
          latencyMs: 10,
          costUsd: key === 'a' ? 0.5 : 0.25,
          promptTokens: key === 'a' ? 1 : 3,
          finishedAt: expect.any(String),
        }),
      ),
    );
    expect(Object.keys(calls.get(first.messageId)![0])).not.toContain('content');
    expect(await reports.callsOf([])).toEqual(new Map());
  });
});

describe('UsageRepository', () => {
  it('sums the tokens and cost of the calls of a deliberation, zero before any', async () => {
    const userId = await newUser();
    const a = (await deliberations.startTurn(turn(userId), null, noFollowUps))!;
    expect(await usage.ofMessage(a.messageId)).toEqual({ promptTokens: 0, completionTokens: 0, costUsd: 0 });
    await insertCall(a.messageId, 'a', 10, 20, 0.001);
    await insertCall(a.messageId, 'b', 5, 7, 0.0025);
    expect(await usage.ofMessage(a.messageId)).toEqual({
      promptTokens: 15,
      completionTokens: 27,
      costUsd: 0.0035,
    });
  });

  it("sums the calls of a batch's items", async () => {
    const userId = await newUser();
    const batchId = await batches.create(
      {
        userId,
        name: null,
        concurrency: 2,
        generateTitles: false,
        defaults: {},
        items: ['p', 'q'].map((q) => ({
          mode: 'council' as const,
          userContent: q,
          config: {},
          firstStage: 'stage1',
        })),
      },
      null,
    );
    expect(await usage.ofBatch(batchId)).toEqual({ promptTokens: 0, completionTokens: 0, costUsd: 0 });
    const [p, q] = await batches.itemsPage(batchId, -1, 10);
    await insertCall(p.messageId, 'a', 1, 2, 0.5);
    await insertCall(q.messageId, 'a', 3, 4, 0.25);
    const outside = (await deliberations.startTurn(turn(userId), null, noFollowUps))!;
    await insertCall(outside.messageId, 'a', 100, 100, 100);
    expect(await usage.ofBatch(batchId)).toEqual({ promptTokens: 4, completionTokens: 6, costUsd: 0.75 });
  });
});
