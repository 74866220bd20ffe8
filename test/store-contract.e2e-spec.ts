import { randomUUID } from 'node:crypto';
import type { CallOutcome, DeliberationStore, ModeEvent, StageRow, StageWrite } from '@conclave/deliberation';
import { MemoryStore } from '../libs/deliberation/src/testing/memory-store';
import { afterStored } from '../libs/deliberation/src/engine/next-stage';
import { dropDatabases, scratchDatabaseUrl } from './support/database';
import {
  TypeOrmDeliberationStore,
  createDataSource,
  migrate,
  type DeliberationStoreOptions,
} from '@conclave/persistence';
import {
  stageWriteParameter,
  stageWriteResult,
  type StageWriteAnswer,
} from '../libs/persistence/src/deliberation.store';
import type { DataSource } from 'typeorm';
import { sleep } from './support/wait';
import { simulatedReply } from './support/replies';

/**
 * The store's contract, one spec run against both stores: the in-memory one the engine's tests
 * use and PostgreSQL's (conclave_stage_write). If they drift, one of the two runs fails.
 */

interface Subject {
  store: DeliberationStore;
  messageId: string;
  /** The conversation's title. */
  title(): Promise<string | null>;
}

interface MessageOptions {
  stage?: string;
  needsTitle?: boolean;
}

interface StoreFixture {
  start(): Promise<void>;
  stop(): Promise<void>;
  message(options?: MessageOptions): Promise<Subject>;
  /** A query straight to the database (PostgreSQL's fixture only). */
  query?(sql: string, params: unknown[]): Promise<Record<string, unknown>[]>;
  /** The database's URL (PostgreSQL's fixture only). */
  url?: string;
}

const memoryFixture = (): StoreFixture => ({
  start: async () => undefined,
  stop: async () => undefined,
  async message({ stage = 'stage1', needsTitle = false } = {}) {
    const store = new MemoryStore('The question', {}, { messageId: randomUUID(), stage, needsTitle });
    return { store, messageId: store.state.messageId, title: async () => store.title };
  },
});

const postgresFixture = (options: DeliberationStoreOptions = {}): StoreFixture => {
  const url = scratchDatabaseUrl('conclave_t_store');
  let db: DataSource;
  let store: TypeOrmDeliberationStore;
  return {
    async start() {
      await migrate(url);
      db = createDataSource(url, 2);
      await db.initialize();
      store = new TypeOrmDeliberationStore(db, options);
    },
    async stop() {
      await db?.destroy();
      await dropDatabases(url);
    },
    query: (sql, params) => db.query(sql, params),
    url,
    async message({ stage = 'stage1', needsTitle = false } = {}) {
      const [user] = await db.query(`INSERT INTO users (name) VALUES ($1) RETURNING id`, [randomUUID()]);
      const [conversation] = await db.query(
        `INSERT INTO conversations (user_id, mode) VALUES ($1, 'council') RETURNING id`,
        [user.id],
      );
      await db.query(
        `INSERT INTO messages (conversation_id, role, content, status, turn, mode)
         VALUES ($1, 'user', 'The question', 'complete', 1, 'council')`,
        [conversation.id],
      );
      const [message] = await db.query(
        `INSERT INTO messages (conversation_id, role, content, status, turn, mode, config, stage, needs_title)
         VALUES ($1, 'assistant', '', 'queued', 1, 'council', '{}', $2, $3) RETURNING id`,
        [conversation.id, stage, needsTitle],
      );
      const title = async () =>
        ((await db.query(`SELECT title FROM conversations WHERE id = $1`, [conversation.id]))[0]?.title ??
          null) as string | null;
      return { store, messageId: message.id as string, title };
    },
  };
};

const answer = (key: string, content: string): CallOutcome =>
  simulatedReply(key, content, {
    model: `sim/${key}`,
    responseTimeMs: 3,
    promptTokens: 1,
    completionTokens: 2,
    costUsd: 0.5,
  });

const failed = (key: string, error: string): CallOutcome => ({
  ok: false,
  key,
  model: `sim/${key}`,
  error,
  responseTimeMs: 4,
});

const row = (participant: number, content: string): StageRow => ({
  stageType: 'stage1',
  stageOrder: 1,
  model: `sim/${participant}`,
  role: 'respondent',
  content,
  parsedData: { participant },
  responseTimeMs: 5,
  promptTokens: null,
  completionTokens: null,
  costUsd: 0.25,
  participant,
});

const event = (key: string, payload: Record<string, unknown> = {}): ModeEvent => ({
  key,
  type: key,
  payload,
});

const TITLE_COMPLETE: ModeEvent = {
  key: 'title_complete',
  type: 'title_complete',
  payload: { data: { title: null } },
};

const END = { status: 'complete', stage: null, content: 'The answer', completed: true } as const;

const typesOf = async (subject: Subject) =>
  (await subject.store.eventsAfter(subject.messageId, 0)).map((e) => e.type);

describe.each([
  ['in memory', memoryFixture],
  ['PostgreSQL', () => postgresFixture()],
  ['PostgreSQL, every write on its own', () => postgresFixture({ groupedWrites: false })],
])('the deliberation store contract (%s)', (_name, makeFixture) => {
  const fixture = makeFixture();
  beforeAll(() => fixture.start(), 60_000);
  afterAll(() => fixture.stop());

  it('answers missing for a message it does not hold', async () => {
    const { store } = await fixture.message();
    expect(await store.writeStage(randomUUID(), { stage: 'stage1', events: [event('x')] })).toEqual({
      kind: 'missing',
    });
    expect(await store.load(randomUUID(), 0)).toBeNull();
  });

  it('numbers new events from 1 in the order given, once per key, and hands them back', async () => {
    const subject = await fixture.message();
    const { store, messageId } = subject;
    const first = await store.writeStage(messageId, {
      stage: 'stage1',
      events: [event('a', { n: 1 }), event('b'), event('a', { n: 2 })],
    });
    expect(first).toMatchObject({
      kind: 'written',
      events: [
        { type: 'a', seq: 1, n: 1, messageId },
        { type: 'b', seq: 2, messageId },
      ],
    });
    const second = await store.writeStage(messageId, { stage: 'stage1', events: [event('b'), event('c')] });
    expect(second).toMatchObject({ kind: 'written', events: [{ type: 'c', seq: 3 }] });
    expect((await store.eventsAfter(messageId, 0)).map((e) => [e.seq, e.type])).toEqual([
      [1, 'a'],
      [2, 'b'],
      [3, 'c'],
    ]);
    expect((await store.eventsAfter(messageId, 2)).map((e) => e.type)).toEqual(['c']);
    for (const e of await store.eventsAfter(messageId, 0)) expect(Number.isNaN(Date.parse(e.at))).toBe(false);
  });

  it('opens a stage: marks a queued message running; a guard for another stage writes only outcomes', async () => {
    const { store, messageId } = await fixture.message();
    expect(
      await store.writeStage(messageId, {
        stage: 'stage1',
        guard: true,
        markRunning: true,
        events: [event('s')],
      }),
    ).toMatchObject({ kind: 'written' });
    expect(await store.load(messageId, 0)).toMatchObject({ status: 'running', stage: 'stage1' });
    expect(
      await store.writeStage(messageId, {
        stage: 'stage2',
        guard: true,
        outcomes: [answer('a', 'late')],
        rows: [row(0, 'late')],
        events: [event('late')],
        update: { status: 'running', stage: 'stage3' },
      }),
    ).toEqual({ kind: 'skipped' });
    const loaded = await store.load(messageId, 0);
    expect(loaded).toMatchObject({ stage: 'stage1', rows: [] });
    expect(loaded?.outcomes.stage2).toEqual([answer('a', 'late')]);
    expect(await store.eventsAfter(messageId, 0)).toHaveLength(1);
  });

  it('keeps the first of each row and outcome, however often they are written', async () => {
    const { store, messageId } = await fixture.message();
    await store.writeStage(messageId, {
      stage: 'stage1',
      rows: [row(1, 'first'), row(0, 'zero')],
      events: [],
    });
    await store.writeStage(messageId, {
      stage: 'stage1',
      rows: [row(1, 'second'), row(2, 'two')],
      events: [],
    });
    const loaded = await store.load(messageId, 0);
    // In stage order, then by participant.
    expect(loaded?.rows.map((r) => r.content)).toEqual(['zero', 'first', 'two']);
    expect(loaded?.rows[1]).toEqual(row(1, 'first'));
    await store.writeStage(messageId, { stage: 'stage1', outcomes: [failed('a', 'first')], events: [] });
    const again = await store.writeStage(messageId, {
      stage: 'stage1',
      outcomes: [failed('a', 'second')],
      events: [],
    });
    expect(again).toEqual({ kind: 'replaced', outcomes: [failed('a', 'first')] });
    expect(await store.loadOutcomes(messageId, 'stage1')).toEqual([failed('a', 'first')]);
  });

  it('on a replaced outcome stores the others, writes nothing else, and answers with the stored ones in order', async () => {
    const { store, messageId } = await fixture.message();
    await store.writeStage(messageId, { stage: 'stage1', outcomes: [answer('b', 'B first')], events: [] });
    const written = await store.writeStage(messageId, {
      stage: 'stage1',
      guard: true,
      outcomes: [answer('a', 'A says'), answer('b', 'B again'), failed('c', 'C failed')],
      rows: [row(0, 'commit')],
      events: [event('stage1_complete')],
      update: { status: 'running', stage: 'stage2' },
    });
    expect(written).toEqual({
      kind: 'replaced',
      outcomes: [answer('a', 'A says'), answer('b', 'B first'), failed('c', 'C failed')],
    });
    const loaded = await store.load(messageId, 0);
    expect(loaded).toMatchObject({ stage: 'stage1', status: 'queued', rows: [] });
    expect(loaded?.outcomes.stage1?.map((o) => o.key).sort()).toEqual(['a', 'b', 'c']);
    expect(await store.eventsAfter(messageId, 0)).toEqual([]);
    // The engine writes the stage again from the stored outcomes, without outcomes.
    expect(
      await store.writeStage(messageId, {
        stage: 'stage1',
        guard: true,
        rows: [row(0, 'commit')],
        events: [event('stage1_complete')],
        update: { status: 'running', stage: 'stage2' },
      }),
    ).toMatchObject({ kind: 'written', events: [{ type: 'stage1_complete', seq: 1 }] });
    expect(await store.load(messageId, 0)).toMatchObject({ stage: 'stage2', status: 'running' });
  });

  it('after the message ended stores only outcomes (usage adds up model_calls), and skips the rest', async () => {
    const { store, messageId } = await fixture.message();
    await store.writeStage(messageId, { stage: 'stage1', events: [event('complete')], update: END });
    const skipped = await store.writeStage(messageId, {
      stage: 'stage1',
      outcomes: [answer('a', 'after the end')],
      rows: [row(0, 'after the end')],
      events: [event('late')],
      update: { status: 'running', stage: 'stage2' },
    });
    expect(skipped).toEqual({ kind: 'skipped' });
    const loaded = await store.load(messageId, 0);
    expect(loaded).toMatchObject({ status: 'complete', stage: null, rows: [] });
    expect(loaded?.outcomes.stage1).toEqual([answer('a', 'after the end')]);
    expect(await typesOf({ store, messageId, title: async () => null })).toEqual(['complete']);
  });

  it('ends a deliberation with a final failure once', async () => {
    const subject = await fixture.message({ stage: 'stage2' });
    const { store, messageId } = subject;
    const failure: StageWrite = {
      stage: 'stage2',
      events: [{ key: 'error', type: 'error', payload: { message: 'It stopped.' } }],
      update: { status: 'failed', stage: null, error: 'It stopped.', completed: true },
    };
    expect(await store.writeStage(messageId, failure)).toMatchObject({
      kind: 'written',
      events: [{ type: 'error', seq: 1, message: 'It stopped.' }],
    });
    expect(await store.load(messageId, 0)).toMatchObject({ status: 'failed', stage: null });
    expect(await store.writeStage(messageId, failure)).toEqual({ kind: 'skipped' });
    expect(await typesOf(subject)).toEqual(['error']);
  });

  it('fills the conversation title into title_complete when the deliberation ends, keeping one already set', async () => {
    const fresh = await fixture.message({ needsTitle: true });
    const ended = await fresh.store.writeStage(fresh.messageId, {
      stage: 'stage1',
      guard: true,
      events: [TITLE_COMPLETE, event('complete')],
      update: END,
      title: 'The fallback',
    });
    expect(ended).toMatchObject({
      kind: 'written',
      events: [
        { type: 'title_complete', seq: 1, data: { title: 'The fallback' } },
        { type: 'complete', seq: 2 },
      ],
    });
    expect(await fresh.title()).toBe('The fallback');

    const titled = await fixture.message({ needsTitle: true });
    await titled.store.writeStage(titled.messageId, {
      stage: 'title',
      outcomes: [answer('title', 'Generated')],
      events: [],
      conversationTitle: 'Generated',
    });
    const later = await titled.store.writeStage(titled.messageId, {
      stage: 'stage1',
      guard: true,
      events: [TITLE_COMPLETE, event('complete')],
      update: END,
      title: 'The fallback',
    });
    expect(later).toMatchObject({ events: [{ type: 'title_complete', data: { title: 'Generated' } }, {}] });
    expect(await titled.title()).toBe('Generated');
  });

  it('drops title_complete and sets no title for a message that needs none', async () => {
    const subject = await fixture.message({ needsTitle: false });
    await subject.store.writeStage(subject.messageId, {
      stage: 'title',
      outcomes: [answer('title', 'Generated')],
      events: [],
      conversationTitle: 'Generated',
    });
    const ended = await subject.store.writeStage(subject.messageId, {
      stage: 'stage1',
      events: [TITLE_COMPLETE, event('complete')],
      update: END,
      title: 'The fallback',
    });
    expect(ended).toMatchObject({ kind: 'written', events: [{ type: 'complete', seq: 1 }] });
    expect(await subject.title()).toBeNull();
  });

  it("stores the title call's outcome with a stage's outcomes and sets the title, keeping one already stored", async () => {
    const subject = await fixture.message({ needsTitle: true });
    const { store, messageId } = subject;
    const settled = await store.writeStage(messageId, {
      stage: 'stage1',
      outcomes: [answer('a', 'A says')],
      events: [event('a_done')],
      titleOutcome: answer('title', 'Generated'),
      conversationTitle: 'Generated',
    });
    expect(settled).toMatchObject({ kind: 'written', events: [{ type: 'a_done', seq: 1 }] });
    expect(await subject.title()).toBe('Generated');
    expect(await store.loadOutcomes(messageId, 'title')).toEqual([answer('title', 'Generated')]);
    expect(await store.loadOutcomes(messageId, 'stage1')).toEqual([answer('a', 'A says')]);
    // A second title outcome (a rerun) leaves the stored one and the title as they are.
    await store.writeStage(messageId, {
      stage: 'stage1',
      events: [],
      titleOutcome: answer('title', 'Other'),
      conversationTitle: 'Other',
    });
    expect(await store.loadOutcomes(messageId, 'title')).toEqual([answer('title', 'Generated')]);
    expect(await subject.title()).toBe('Generated');
    // Outcomes answered 'replaced': the title call's is not stored with them (the write is made again).
    const replaced = await store.writeStage(messageId, {
      stage: 'stage1',
      outcomes: [answer('a', 'A again')],
      events: [],
      titleOutcome: answer('title', 'Third'),
    });
    expect(replaced).toEqual({ kind: 'replaced', outcomes: [answer('a', 'A says')] });
  });

  it("loads when the current stage's opening was stored, for a retried stage's deadline", async () => {
    const { store, messageId } = await fixture.message();
    expect((await store.load(messageId, 0))?.stageOpenedAt ?? null).toBeNull();
    const before = Date.now();
    const started = (key: string): ModeEvent => ({
      key: `model_progress:stage1:${key}:started`,
      type: 'model_progress',
      payload: { stage: 'stage1', participant: key, state: 'started' },
    });
    await store.writeStage(messageId, {
      stage: 'stage1',
      guard: true,
      markRunning: true,
      events: [event('stage1_start'), started('a'), started('b')],
    });
    const opened = (await store.load(messageId, 0))?.stageOpenedAt;
    expect(opened).toBeInstanceOf(Date);
    // Database and test clocks agree to within a second on this machine.
    expect(Math.abs((opened as Date).getTime() - before)).toBeLessThan(1000);
    await sleep(30);
    await store.writeStage(messageId, { stage: 'stage1', events: [started('c')] });
    expect((await store.load(messageId, 0))?.stageOpenedAt).toEqual(opened);
    await store.writeStage(messageId, {
      stage: 'stage1',
      guard: true,
      events: [event('stage1_complete')],
      update: { status: 'running', stage: 'stage2' },
    });
    expect((await store.load(messageId, 0))?.stageOpenedAt ?? null).toBeNull();
  });

  it('answers a commit asked for it with what it stored, as a load reads it (rows, outcomes), without loading', async () => {
    const { store, messageId } = await fixture.message();
    await store.writeStage(messageId, {
      stage: 'stage1',
      outcomes: [answer('a', 'A says')],
      rows: [{ ...row(3, 'an earlier stage'), stageType: 'stage0', stageOrder: 0 }],
      events: [event('a_done')],
    });
    await store.writeStage(messageId, { stage: 'stage0', outcomes: [answer('z', 'Z says')], events: [] });
    const before = await store.load(messageId, 0);
    if (!before) throw new Error('not stored');
    // Rows in an order PostgreSQL does not keep (participant 2 before 1, a row without one last),
    // parsed data whose keys jsonb orders otherwise, numbers and nulls as they come back, and two
    // rows with one identity (the store keeps the first).
    const rows: StageRow[] = [
      {
        ...row(2, 'second'),
        parsedData: { zebra: 1, a: [{ long_key: true, k: 'x' }], mid: { yy: 1, x: null } },
      },
      row(1, 'first'),
      row(1, 'first again'),
      { ...row(0, 'summary'), stageType: 'summary', participant: null, costUsd: 0.1 + 0.2, parsedData: null },
    ];
    const commit: StageWrite = {
      stage: 'stage1',
      guard: true,
      outcomes: [failed('b', 'timed out')],
      rows,
      events: [event('stage1_complete')],
      update: { status: 'running', stage: 'stage2' },
      titleOutcome: answer('title', 'T'),
    };
    const written = await store.writeStage(messageId, { ...commit, loaded: true });
    if (written.kind !== 'written') throw new Error(`not written: ${written.kind}`);
    expect(written.events.map((e) => e.type)).toEqual(['stage1_complete']);
    const after = await store.load(messageId, 0);
    if (!after || !written.stored) throw new Error('not answered');
    // What the write changed: the rows from its least stage order on, its stage's and the title's outcomes.
    expect(written.stored.from).toBe(1);
    expect(written.stored.rows.map((r) => r.content)).toEqual(['summary', 'first', 'second']);
    expect(Object.keys(written.stored.outcomes).sort()).toEqual(['stage1', 'title']);
    // With what was loaded before, what a load now returns.
    const now = afterStored(before, written.stored);
    expect(now).toEqual({ rows: after.rows, outcomes: after.outcomes });
    expect(after.rows.map((r) => r.content)).toEqual(['an earlier stage', 'summary', 'first', 'second']);
    // Key order too: a mode that walks an object's keys sees them as a load gives them.
    expect(JSON.stringify(now.rows)).toBe(JSON.stringify(after.rows));
    // Only when asked: other writes answer with their events alone.
    const plain = await store.writeStage(messageId, { stage: 'stage2', events: [event('x')] });
    expect(plain).toEqual({ kind: 'written', events: [expect.objectContaining({ type: 'x' })] });
  });

  it('answers a commit with the texts stored before as stored, not as sent again (an earlier run kept its row and outcome)', async () => {
    const { store, messageId } = await fixture.message();
    // An earlier run stored a row of the same identity and the title call, in other words.
    await store.writeStage(messageId, {
      stage: 'stage1',
      outcomes: [answer('a', 'A says')],
      rows: [row(1, 'kept from the earlier run')],
      titleOutcome: answer('title', 'Earlier title'),
      events: [],
    });
    const before = await store.load(messageId, 0);
    if (!before) throw new Error('not stored');
    const written = await store.writeStage(messageId, {
      stage: 'stage1',
      guard: true,
      outcomes: [answer('b', 'B says')],
      rows: [row(2, 'second'), row(1, 'sent again')],
      events: [event('stage1_complete')],
      update: { status: 'running', stage: 'stage2' },
      titleOutcome: answer('title', 'Later title'),
      loaded: true,
    });
    if (written.kind !== 'written' || !written.stored) throw new Error(`not answered: ${written.kind}`);
    const after = await store.load(messageId, 0);
    if (!after) throw new Error('not stored');
    expect(written.stored.rows.map((r) => r.content)).toEqual(['kept from the earlier run', 'second']);
    expect(written.stored.outcomes.stage1?.map((o) => o.ok && o.content)).toEqual(['A says', 'B says']);
    expect(written.stored.outcomes.title?.map((o) => o.ok && o.content)).toEqual(['Earlier title']);
    expect(afterStored(before, written.stored)).toEqual({ rows: after.rows, outcomes: after.outcomes });
  });

  it("sets the title job's title after the turn failed, and never over a title already set", async () => {
    const subject = await fixture.message({ needsTitle: true });
    const { store, messageId } = subject;
    await store.writeStage(messageId, {
      stage: 'stage1',
      events: [event('error')],
      update: { status: 'failed', stage: null, error: 'x', completed: true },
    });
    expect(
      await store.writeStage(messageId, {
        stage: 'title',
        outcomes: [answer('title', 'Generated')],
        events: [],
        conversationTitle: 'Generated',
      }),
    ).toEqual({ kind: 'skipped' });
    expect(await subject.title()).toBe('Generated');
    expect(await store.loadOutcomes(messageId, 'title')).toEqual([answer('title', 'Generated')]);
    await store.writeStage(messageId, { stage: 'title', events: [], conversationTitle: 'Another' });
    expect(await subject.title()).toBe('Generated');
  });
});

describe.each([
  ['grouped (the default)', {}, 1],
  ['every write on its own', { groupedWrites: false as const }, 12],
])('PostgreSQL: stage writes of many deliberations at once, %s', (_name, options, transactions) => {
  const warnings: string[] = [];
  const fixture = postgresFixture({ ...options, warn: (message) => warnings.push(message) });
  beforeAll(() => fixture.start(), 60_000);
  afterAll(() => fixture.stop());
  const query = (sql: string, params: unknown[]) =>
    (fixture.query as NonNullable<StoreFixture['query']>)(sql, params);

  it(`answers each write with its own events, stored in ${transactions} transaction(s)`, async () => {
    const subjects = await Promise.all(Array.from({ length: 12 }, () => fixture.message()));
    const answers = await Promise.all(
      subjects.map(({ store, messageId }, i) =>
        store.writeStage(messageId, {
          stage: 'stage1',
          guard: true,
          markRunning: true,
          outcomes: [answer('a', `answer ${i}`)],
          // Keys of its own: a write answered with another's result would not find its events.
          events: [event(`start_${i}`), event('settled', { i })],
        }),
      ),
    );
    answers.forEach((written, i) =>
      expect(written).toMatchObject({
        kind: 'written',
        events: [
          { type: `start_${i}`, seq: 1, messageId: subjects[i].messageId },
          { type: 'settled', seq: 2, i, messageId: subjects[i].messageId },
        ],
      }),
    );
    const ids = subjects.map((s) => s.messageId);
    for (const { store, messageId } of subjects) {
      expect((await store.load(messageId, 0))?.status).toBe('running');
    }
    // now() is the transaction's start: one value for all twelve when they were one transaction.
    const [stored] = await query(
      `SELECT count(*)::int AS calls, count(DISTINCT created_at)::int AS transactions
       FROM model_calls WHERE message_id = ANY($1)`,
      [ids],
    );
    expect(stored).toEqual({ calls: 12, transactions });
    for (const [i, { store, messageId }] of subjects.entries()) {
      expect(await store.loadOutcomes(messageId, 'stage1')).toEqual([answer('a', `answer ${i}`)]);
    }
  });

  it('answers each commit asked for it with its own message as stored (conclave_stage_write_group too)', async () => {
    const subjects = await Promise.all(Array.from({ length: 6 }, () => fixture.message()));
    const answers = await Promise.all(
      subjects.map(({ store, messageId }, i) =>
        store.writeStage(messageId, {
          stage: 'stage1',
          guard: true,
          outcomes: [answer('a', `answer ${i}`)],
          rows: [row(2, `second ${i}`), row(1, `first ${i}`)],
          events: [event(`done_${i}`)],
          update: { status: 'running', stage: 'stage2' },
          loaded: true,
        }),
      ),
    );
    for (const [i, { store, messageId }] of subjects.entries()) {
      const after = await store.load(messageId, 0);
      expect(answers[i]).toMatchObject({
        kind: 'written',
        stored: { from: 1, rows: after?.rows, outcomes: after?.outcomes },
      });
      expect(after?.rows.map((r) => r.content)).toEqual([`first ${i}`, `second ${i}`]);
    }
    if (transactions === 1) {
      const [stored] = await query(
        `SELECT count(DISTINCT created_at)::int AS transactions FROM model_calls WHERE message_id = ANY($1)`,
        [subjects.map((s) => s.messageId)],
      );
      expect(stored).toEqual({ transactions: 1 });
    }
  });

  it('sends back no text a commit sent and stored: its rows and outcomes answer `true` for their content', async () => {
    const { store, messageId } = await fixture.message();
    await store.writeStage(messageId, { stage: 'stage1', outcomes: [answer('a', 'A says')], events: [] });
    const commit: StageWrite = {
      stage: 'stage1',
      guard: true,
      outcomes: [answer('b', 'B says'), failed('c', 'timed out')],
      rows: [row(1, 'first'), row(2, 'second')],
      events: [event('stage1_complete')],
      update: { status: 'running', stage: 'stage2' },
      titleOutcome: answer('title', 'T'),
      loaded: true,
    };
    const [{ result }] = await query('SELECT conclave_stage_write($1, $2::jsonb) AS result', [
      messageId,
      stageWriteParameter(commit),
    ]);
    const answered = result as { rows: unknown[][]; outcomes: unknown[][] };
    // Rows: [stage_type, stage_order, model, role, content, ...]; outcomes: [stage, call_key, model, served_model, ok, content, ...].
    expect(answered.rows.map((r) => r[4])).toEqual([true, true]);
    // (Those stored in one transaction come in the order of their ids.)
    expect(answered.outcomes.map((o) => [o[1], o[5]]).sort()).toEqual([
      ['a', 'A says'],
      ['b', true],
      ['c', true],
      ['title', true],
    ]);
    // And the engine reads it as a load would.
    const stored = stageWriteResult(messageId, commit, result as StageWriteAnswer);
    const after = await store.load(messageId, 0);
    expect(stored).toMatchObject({
      kind: 'written',
      stored: { rows: after?.rows, outcomes: after?.outcomes },
    });
    // Without asSent (an engine from before 1764900000000), the texts come back.
    const other = await fixture.message();
    const [{ result: plain }] = await query('SELECT conclave_stage_write($1, $2::jsonb) AS result', [
      other.messageId,
      JSON.stringify({ ...JSON.parse(stageWriteParameter(commit)), asSent: undefined }),
    ]);
    expect((plain as { rows: unknown[][] }).rows.map((r) => r[4])).toEqual(['first', 'second']);
  });

  it('answers each write of one statement as it would alone: written, skipped, missing, replaced, a title filled', async () => {
    const [plain, ended, earlier, titled] = await Promise.all([
      fixture.message(),
      fixture.message(),
      fixture.message(),
      fixture.message({ needsTitle: true }),
    ]);
    await ended.store.writeStage(ended.messageId, {
      stage: 'stage1',
      events: [event('error')],
      update: { status: 'failed', stage: null, error: 'x', completed: true },
    });
    await earlier.store.writeStage(earlier.messageId, {
      stage: 'stage1',
      outcomes: [answer('b', 'B first')],
      events: [],
    });
    const missing = randomUUID();
    const [written, skipped, gone, replaced, withTitle] = await Promise.all([
      plain.store.writeStage(plain.messageId, {
        stage: 'stage1',
        outcomes: [answer('p', 'P says')],
        events: [event('plain')],
      }),
      ended.store.writeStage(ended.messageId, { stage: 'stage1', events: [event('late')] }),
      plain.store.writeStage(missing, { stage: 'stage1', events: [event('x')] }),
      earlier.store.writeStage(earlier.messageId, {
        stage: 'stage1',
        guard: true,
        outcomes: [answer('a', 'A says'), answer('b', 'B again')],
        events: [event('stage1_complete')],
        update: { status: 'running', stage: 'stage2' },
      }),
      titled.store.writeStage(titled.messageId, {
        stage: 'stage1',
        guard: true,
        events: [TITLE_COMPLETE, event('complete')],
        update: END,
        title: 'The fallback',
      }),
    ]);
    expect(written).toMatchObject({ kind: 'written', events: [{ type: 'plain', seq: 1 }] });
    expect(skipped).toEqual({ kind: 'skipped' });
    expect(gone).toEqual({ kind: 'missing' });
    expect(replaced).toEqual({ kind: 'replaced', outcomes: [answer('a', 'A says'), answer('b', 'B first')] });
    expect(withTitle).toMatchObject({
      kind: 'written',
      events: [
        { type: 'title_complete', seq: 1, data: { title: 'The fallback' } },
        { type: 'complete', seq: 2 },
      ],
    });
    expect(await titled.title()).toBe('The fallback');
    expect(await typesOf(ended)).toEqual(['error']);
    expect(await typesOf(earlier)).toEqual([]);
    // Grouped, they were one statement: one transaction stored both new outcomes (now() is its start).
    const [stored] = await query(
      `SELECT count(*)::int AS calls, count(DISTINCT created_at)::int AS transactions FROM model_calls
       WHERE (message_id = $1 AND model = 'sim/p') OR (message_id = $2 AND model = 'sim/a')`,
      [plain.messageId, earlier.messageId],
    );
    expect(stored).toEqual({ calls: 2, transactions: transactions === 1 ? 1 : 2 });
  });

  it("does not let one write waiting on another writer's lock hold up the others for long", async () => {
    const [free, held] = await Promise.all([fixture.message(), fixture.message()]);
    // Another writer holds the second message's row (a batch being deleted, say).
    const other = createDataSource(fixture.url as string, 1);
    await other.initialize();
    const holder = other.createQueryRunner();
    try {
      await holder.startTransaction();
      await holder.query('SELECT id FROM messages WHERE id = $1 FOR UPDATE', [held.messageId]);
      let heldAnswered = false;
      const heldWrite = held.store
        .writeStage(held.messageId, { stage: 'stage1', events: [event('held')] })
        .finally(() => (heldAnswered = true));
      const freeWrite = free.store.writeStage(free.messageId, { stage: 'stage1', events: [event('free')] });
      // Grouped, the free write waits for the group's lock_timeout (1 s), then goes on its own.
      const raced = await Promise.race([
        freeWrite.then(() => 'free written'),
        new Promise((resolve) => setTimeout(() => resolve('still waiting'), 5_000)),
      ]);
      expect(raced).toBe('free written');
      // And its next write does not wait for the held one either.
      const next = await Promise.race([
        free.store
          .writeStage(free.messageId, { stage: 'stage1', events: [event('free again')] })
          .then(() => 'free written again'),
        new Promise((resolve) => setTimeout(() => resolve('still waiting'), 5_000)),
      ]);
      expect(next).toBe('free written again');
      expect(heldAnswered).toBe(false);
      await holder.commitTransaction();
      expect(await heldWrite).toMatchObject({ kind: 'written', events: [{ type: 'held', seq: 1 }] });
      expect(await typesOf(free)).toEqual(['free', 'free again']);
      // The operator hears of the refused group (once a minute at most), not of a single write's wait.
      expect(warnings).toEqual(
        transactions === 1
          ? [expect.stringMatching(/^1 group\(s\) of stage writes refused by PostgreSQL \(last: 55P03/)]
          : [],
      );
    } finally {
      if (holder.isTransactionActive) await holder.rollbackTransaction();
      await holder.release();
      await other.destroy();
    }
  });

  it("keeps one deliberation's writes in the order given, and a write that fails fails alone", async () => {
    const [one, two] = await Promise.all([fixture.message(), fixture.message()]);
    const missing = randomUUID();
    const results = await Promise.allSettled([
      one.store.writeStage(one.messageId, { stage: 'stage1', events: [event('first')] }),
      two.store.writeStage(two.messageId, { stage: 'stage1', events: [event('other')] }),
      one.store.writeStage('not-a-uuid', { stage: 'stage1', events: [event('x')] }),
      one.store.writeStage(missing, { stage: 'stage1', events: [event('x')] }),
      one.store.writeStage(one.messageId, { stage: 'stage1', events: [event('second')] }),
    ]);
    expect(results.map((r) => r.status)).toEqual([
      'fulfilled',
      'fulfilled',
      'rejected',
      'fulfilled',
      'fulfilled',
    ]);
    expect((results[2] as PromiseRejectedResult).reason).toEqual(
      expect.objectContaining({ message: expect.stringMatching(/uuid/) }),
    );
    expect((results[3] as PromiseFulfilledResult<unknown>).value).toEqual({ kind: 'missing' });
    expect(await typesOf(one)).toEqual(['first', 'second']);
    expect(await typesOf(two)).toEqual(['other']);
  });
});
