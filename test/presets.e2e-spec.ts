import type {
  ApiErrorBody,
  BatchEstimate,
  CouncilResult,
  DeliberationAccepted,
  DeliberationEstimate,
  DeliberationView,
  JuryResult,
  Preset,
} from '@conclave/contracts';
import { PRESETS_PER_USER } from '@conclave/contracts';
import fc from 'fast-check';
import { TestStack } from './support/harness';

/**
 * Presets (issue 22): a saved mode, roster and options, per user, at /api/presets, usable as
 * `preset` in POST /api/deliberations (and batches, and dry runs). On the real stack: gateway,
 * worker, PostgreSQL and Redis; the panel is the simulated provider.
 */
describe('presets', () => {
  const stack = new TestStack({ AUTH_MODE: 'apikey' });
  let alice = '';
  let bob = '';

  beforeAll(async () => {
    await stack.start();
    alice = await stack.createUser('alice');
    bob = await stack.createUser('bob');
  }, 60_000);
  afterAll(() => stack.stop());

  const save = (body: unknown, token = alice) =>
    stack.api<Preset & ApiErrorBody>('POST', '/api/presets', { body, token });
  const get = (name: string, token = alice) =>
    stack.api<Preset & ApiErrorBody>('GET', `/api/presets/${encodeURIComponent(name)}`, { token });
  const remove = (name: string, token = alice) =>
    stack.api<ApiErrorBody | null>('DELETE', `/api/presets/${encodeURIComponent(name)}`, { token });
  const list = (token = alice) => stack.api<Preset[]>('GET', '/api/presets', { token });
  const start = (body: unknown, token = alice, headers: Record<string, string> = {}) =>
    stack.api<DeliberationAccepted & ApiErrorBody>('POST', '/api/deliberations', { body, token, headers });

  /** Starts a deliberation with the key, waits for its end, and gives its stored view. */
  async function run<T>(body: unknown, token = alice): Promise<DeliberationView<T>> {
    const accepted = await start(body, token);
    expect(accepted.status).toBe(202);
    const socket = await stack.connect(token);
    try {
      await stack.follow(accepted.body.messageId, { socket });
    } finally {
      socket.disconnect();
    }
    const view = await stack.api<DeliberationView<T>>(
      'GET',
      `/api/deliberations/${accepted.body.messageId}`,
      {
        token,
      },
    );
    expect(view.status).toBe(200);
    return view.body;
  }

  /** The resolved config the deliberation was stored with (its roster among it). */
  async function storedConfig(messageId: string): Promise<Record<string, unknown>> {
    const [row] = await stack.db.query('SELECT config FROM messages WHERE id = $1', [messageId]);
    return row.config;
  }

  describe('CRUD', () => {
    it('needs a key, like every /api route', async () => {
      expect((await stack.api('GET', '/api/presets')).status).toBe(401);
      expect((await stack.api('POST', '/api/presets', { body: { name: 'x' } })).status).toBe(401);
      expect((await stack.api('DELETE', '/api/presets/x', { token: 'ck_wrong' })).status).toBe(401);
    });

    it('creates (201), lists, reads, replaces (200, createdAt kept) and deletes (204, then 404)', async () => {
      const created = await save({
        name: 'crud-trio',
        councilModels: ['sim/athena', 'sim/hermes'],
        chairmanModel: 'sim/apollo',
        modeConfig: { timeoutMs: 45_000 },
      });
      expect(created.status).toBe(201);
      expect(created.body).toEqual({
        name: 'crud-trio',
        mode: 'council',
        councilModels: ['sim/athena', 'sim/hermes'],
        chairmanModel: 'sim/apollo',
        modeConfig: { timeoutMs: 45_000 },
        createdAt: expect.any(String),
        updatedAt: expect.any(String),
      });
      expect((await list()).body.map((p) => p.name)).toContain('crud-trio');
      expect((await get('crud-trio')).body).toEqual(created.body);

      const replaced = await save({
        name: 'crud-trio',
        mode: 'vote',
        modeConfig: { models: ['sim/a', 'sim/b', 'sim/c'] },
      });
      expect(replaced.status).toBe(200);
      expect(replaced.body).toEqual({
        name: 'crud-trio',
        mode: 'vote',
        modeConfig: { models: ['sim/a', 'sim/b', 'sim/c'] },
        createdAt: created.body.createdAt,
        updatedAt: expect.any(String),
      });
      expect(Date.parse(replaced.body.updatedAt)).toBeGreaterThanOrEqual(Date.parse(created.body.createdAt));
      expect((await get('crud-trio')).body).toEqual(replaced.body);
      expect((await list()).body.filter((p) => p.name === 'crud-trio')).toHaveLength(1);

      const deleted = await remove('crud-trio');
      expect(deleted.status).toBe(204);
      expect((await get('crud-trio')).status).toBe(404);
      const again = await remove('crud-trio');
      expect(again.status).toBe(404);
      expect(again.body?.message).toBe('preset crud-trio not found');
      expect((await list()).body.map((p) => p.name)).not.toContain('crud-trio');
    });

    it('lists by name, and a name that cannot be one is a 404 that does not echo it', async () => {
      for (const name of ['list-b', 'list-a']) expect((await save({ name })).status).toBe(201);
      const names = (await list()).body.map((p) => p.name);
      expect(names.indexOf('list-a')).toBeLessThan(names.indexOf('list-b'));
      const odd = await get('NOT a <name>');
      expect(odd.status).toBe(404);
      expect(odd.body.message).toBe('preset not found');
      expect((await remove('x'.repeat(500))).status).toBe(404);
    });

    it(`keeps at most ${PRESETS_PER_USER} presets per user: a new name over it is a 409, a replacement is not`, async () => {
      const carol = await stack.createUser('carol');
      expect((await save({ name: 'cap-0' }, carol)).status).toBe(201);
      // The rest of the cap filled in one statement, beside the one saved through the API.
      await stack.db.query(
        `INSERT INTO presets (user_id, name, mode, request)
         SELECT user_id, 'cap-' || g, mode, request FROM presets, generate_series(1, $1) g WHERE name = 'cap-0'`,
        [PRESETS_PER_USER - 1],
      );
      expect((await list(carol)).body).toHaveLength(PRESETS_PER_USER);
      const over = await save({ name: 'one-more' }, carol);
      expect(over.status).toBe(409);
      expect(over.body.message).toMatch(
        new RegExp(`You have ${PRESETS_PER_USER} presets, the most one user keeps: delete one first`),
      );
      expect((await save({ name: 'cap-7', mode: 'debate' }, carol)).status).toBe(200);
      expect((await remove('cap-3', carol)).status).toBe(204);
      expect((await save({ name: 'one-more' }, carol)).status).toBe(201);
    });
  });

  describe('validation: the deliberation request validator, field by field', () => {
    /** The fields a 400 names. */
    const fieldsOf = async (body: unknown) => {
      const response = await save(body);
      expect(response.status).toBe(400);
      expect(response.body.message).toMatch(/^Invalid request: /);
      return response.body.fields ?? {};
    };

    it('names a bad name and says why (the model id conclave/preset/<name>)', async () => {
      expect((await fieldsOf({ mode: 'council' })).name).toMatch(/^name is required/);
      for (const name of ['Fast Trio', 'a/b', '', 'x'.repeat(65), 42, '.hidden']) {
        expect((await fieldsOf({ name })).name).toMatch(
          /lowercase letters, digits.*model id conclave\/preset\/<name>, so no slashes, spaces or capitals/,
        );
      }
    });

    it('fails as POST /api/deliberations fails: unknown mode, a 7-model council, unknown fields, bad options', async () => {
      const seven = ['sim/a', 'sim/b', 'sim/c', 'sim/d', 'sim/e', 'sim/f', 'sim/g'];
      for (const fields of [
        { mode: 'parliament' },
        { councilModels: seven },
        { councilModels: ['sim/a', 'sim/b'], chairmanModel: 'no-slash' },
        { stray: true, modeConfig: { alsoStray: 1 } },
        { mode: 'vote', chairmanModel: 'sim/c' },
        { mode: 'delphi', modeConfig: { panelistModels: ['sim/a'], maxRounds: 0 } },
        { mode: 'jury', modeConfig: { jurorModels: ['sim/a', 'sim/b', 'sim/c'], foremanModel: 'sim/a' } },
        { modeConfig: [] },
      ]) {
        const asPreset = await fieldsOf({ name: 'bad', ...fields });
        const request = {
          question: 'Q?',
          ...fields,
          ...(fields.mode === 'jury' ? { modeConfig: { ...fields.modeConfig, content: 'C' } } : {}),
        };
        const asRequest = await start(request);
        expect(asRequest.status).toBe(400);
        expect(Object.keys(asPreset).length).toBeGreaterThan(0);
        expect(asPreset).toEqual(asRequest.body.fields);
      }
      expect((await get('bad')).status).toBe(404);
    });

    it("refuses the question and jury's content (they go with each deliberation); a jury preset needs no content", async () => {
      const fields = await fieldsOf({
        name: 'with-question',
        question: 'What is 2+2?',
        mode: 'jury',
        modeConfig: { content: 'A draft', originalQuestion: 'Write a draft' },
      });
      expect(fields).toEqual({
        question: expect.stringMatching(/^question is not part of a preset/),
        'modeConfig.content': expect.stringMatching(/^modeConfig.content is not part of a preset/),
        'modeConfig.originalQuestion': expect.stringMatching(/not part of a preset/),
      });
      expect(Object.keys(await fieldsOf({ name: 'p', conversationId: 'c', preset: 'other' })).sort()).toEqual(
        ['conversationId', 'preset'],
      );
      const jury = await save({ name: 'jury-ok', mode: 'jury', modeConfig: { timeoutMs: 20_000 } });
      expect(jury.status).toBe(201);
      expect(jury.body).toMatchObject({ mode: 'jury', modeConfig: { timeoutMs: 20_000 } });
    });

    it('answers hostile bodies with a clear 4xx, never a 5xx: oversized, malformed, not an object, deep, NUL', async () => {
      const oversized = await stack.api<ApiErrorBody>('POST', '/api/presets', {
        token: alice,
        body: { name: 'big', modeConfig: { councilModels: ['x'.repeat(400_000)] } },
      });
      expect(oversized.status).toBe(413);
      expect(oversized.body.message).toBe('Request body is larger than the 256kb limit');
      const longOption = await fieldsOf({
        name: 'long',
        mode: 'delphi',
        modeConfig: { options: ['short', 'y'.repeat(5000)] },
      });
      expect(Object.keys(longOption)).toEqual(['modeConfig.options']);
      const malformed = await stack.api<ApiErrorBody>('POST', '/api/presets', {
        token: alice,
        raw: '{"name":',
      });
      expect(malformed.status).toBe(400);
      expect(await fieldsOf(['not', 'an', 'object'])).toEqual({
        body: 'the request body must be a JSON object',
      });
      const deep = await stack.api<ApiErrorBody>('POST', '/api/presets', {
        token: alice,
        raw: `{"name":"deep","councilModels":${'['.repeat(5000)}"sim/a"${']'.repeat(5000)}}`,
      });
      expect(deep.status).toBe(400);
      expect(Object.keys(deep.body.fields ?? {})).toEqual(['body']);
      expect(await fieldsOf({ name: 'nul', chairmanModel: 'sim/a\u0000' })).toEqual({
        chairmanModel: expect.stringMatching(/chairmanModel/),
      });
      const proto = await fieldsOf(JSON.parse('{"name":"proto","__proto__":{"x":1}}'));
      expect(Object.entries(proto)).toEqual([['__proto__', 'property __proto__ should not exist']]);
    });
  });

  describe('fuzzed bodies', () => {
    const KEYS = [
      'name',
      'mode',
      'modeConfig',
      'councilModels',
      'chairmanModel',
      'question',
      'preset',
      '__proto__',
    ];
    const value = fc.oneof(
      fc.constantFrom('council', 'jury', 'delphi', 'sim/a', 'fuzz', '', null, 0, -1, 1e308, true),
      fc.array(fc.constantFrom('sim/a', 'sim/b', 'sim/c', 'x', 7), { maxLength: 8 }),
      fc.dictionary(
        fc.constantFrom('timeoutMs', 'content', 'jurorModels', 'models', 'maxRounds', 'x'),
        fc.jsonValue(),
      ),
      fc.jsonValue(),
    );
    const envelope = fc.dictionary(fc.constantFrom(...KEYS), value).map((o) => JSON.stringify(o));

    it('POST /api/presets and `preset` in POST /api/deliberations: never a 5xx, an error names its fields', async () => {
      await fc.assert(
        fc.asyncProperty(fc.oneof(envelope, fc.json()), async (raw) => {
          for (const [url, body] of [
            ['/api/presets', raw],
            ['/api/deliberations?dryRun=true', JSON.stringify({ question: 'Q', preset: JSON.parse(raw) })],
          ] as const) {
            const answer = await stack.api<ApiErrorBody>('POST', url, { token: alice, raw: body });
            expect(answer.status).toBeLessThan(500);
            if (answer.status >= 400) {
              expect(answer.body).toMatchObject({ statusCode: answer.status, message: expect.any(String) });
              // A 400 names its fields, unless the body parser refused the body before any field was read.
              if (answer.status === 400 && !answer.body.fields)
                expect(answer.body.message).toMatch(/^Request body /);
              if (answer.body.fields) expect(Object.keys(answer.body.fields).length).toBeGreaterThan(0);
            }
          }
        }),
        { numRuns: 120 },
      );
    });
  });

  describe('isolation', () => {
    beforeAll(async () => {
      expect((await save({ name: 'alices', councilModels: ['sim/athena', 'sim/hermes'] })).status).toBe(201);
    });

    it("another user cannot see, read, use or delete a user's preset", async () => {
      expect((await list(bob)).body).toEqual([]);
      expect((await get('alices', bob)).status).toBe(404);
      expect((await remove('alices', bob)).status).toBe(404);
      const used = await start({ question: 'Q?', preset: 'alices' }, bob);
      expect(used.status).toBe(400);
      expect(used.body.fields).toEqual({ preset: 'no preset named "alices"' });
      // Still Alice's, untouched.
      expect((await get('alices')).status).toBe(200);
    });

    it('names are per user: the same name is two presets', async () => {
      const bobs = await save({ name: 'alices', mode: 'vote' }, bob);
      expect(bobs.status).toBe(201);
      expect((await get('alices', bob)).body.mode).toBe('vote');
      expect((await get('alices')).body.mode).toBe('council');
      expect((await remove('alices', bob)).status).toBe(204);
      expect((await get('alices')).status).toBe(200);
    });
  });

  describe('`preset` in POST /api/deliberations', () => {
    beforeAll(async () => {
      expect(
        (
          await save({
            name: 'panel',
            councilModels: ['sim/athena', 'sim/hermes'],
            chairmanModel: 'sim/apollo',
            modeConfig: { timeoutMs: 45_000 },
          })
        ).status,
      ).toBe(201);
      expect(
        (
          await save({
            name: 'jury-3',
            mode: 'jury',
            modeConfig: { jurorModels: ['sim/themis', 'sim/astraea', 'sim/dike'], foremanModel: 'sim/minos' },
          })
        ).status,
      ).toBe(201);
    });

    it("runs with the preset's roster and options", async () => {
      const view = await run<CouncilResult>({ question: 'Which sort is best?', preset: 'panel' });
      expect(view.status).toBe('complete');
      expect(view.mode).toBe('council');
      expect(view.result.stage1.map((r) => r.model).sort()).toEqual(['sim/athena', 'sim/hermes']);
      expect(view.result.stage3.model).toBe('sim/apollo');
      expect(await storedConfig(view.messageId)).toEqual({
        councilModels: ['sim/athena', 'sim/hermes'],
        chairmanModel: 'sim/apollo',
        timeoutMs: 45_000,
      });
    });

    it("lets the request's own fields win, modeConfig merged key by key", async () => {
      const view = await run<CouncilResult>({
        question: 'Which sort is best?',
        preset: 'panel',
        chairmanModel: 'sim/zeus',
        modeConfig: { councilModels: ['sim/hermes', 'sim/apollo', 'sim/athena'] },
      });
      expect(view.status).toBe('complete');
      expect(view.result.stage1.map((r) => r.model).sort()).toEqual([
        'sim/apollo',
        'sim/athena',
        'sim/hermes',
      ]);
      expect(view.result.stage3.model).toBe('sim/zeus');
      expect(await storedConfig(view.messageId)).toEqual({
        councilModels: ['sim/hermes', 'sim/apollo', 'sim/athena'],
        chairmanModel: 'sim/zeus',
        timeoutMs: 45_000,
      });
    });

    it("a jury preset takes the content from the request and seats the preset's jurors", async () => {
      const view = await run<JuryResult>({
        question: 'Evaluate',
        preset: 'jury-3',
        modeConfig: { content: 'The users endpoint returns a list of users.' },
      });
      expect(view.status).toBe('complete');
      expect(view.mode).toBe('jury');
      expect(await storedConfig(view.messageId)).toMatchObject({
        content: 'The users endpoint returns a list of users.',
        jurorModels: ['sim/themis', 'sim/astraea', 'sim/dike'],
        foremanModel: 'sim/minos',
      });
      // and a jury request over the preset still needs its content, named as without one
      const missing = await start({ question: 'Evaluate', preset: 'jury-3' });
      expect(missing.status).toBe(400);
      expect(missing.body.fields).toEqual({ 'modeConfig.content': 'Content to evaluate is required' });
    });

    it("refuses a mode other than the preset's, an unknown preset and a preset that is not a name", async () => {
      const mismatch = await start({ question: 'Q?', preset: 'jury-3', mode: 'council' });
      expect(mismatch.status).toBe(400);
      expect(mismatch.body.fields).toEqual({
        mode: 'preset "jury-3" is a jury preset; a council request cannot use it (leave mode out or send jury)',
      });
      const unknown = await start({ question: 'Q?', preset: 'nothing-here' });
      expect(unknown.status).toBe(400);
      expect(unknown.body.fields).toEqual({ preset: 'no preset named "nothing-here"' });
      for (const preset of [7, ['panel'], 'Not A Name', 'x'.repeat(300)]) {
        const bad = await start({ question: 'Q?', preset });
        expect(bad.status).toBe(400);
        expect(Object.keys(bad.body.fields ?? {})).toEqual(['preset']);
      }
      // preset: null is no preset, as null is for every optional field
      const none = await start({ question: 'Q?', preset: null, councilModels: ['sim/a', 'sim/b'] });
      expect(none.status).toBe(202);
      // the preset's own fields still go through the validator (request overrides included)
      const over = await start({ question: 'Q?', preset: 'panel', modeConfig: { timeoutMs: 5 } });
      expect(over.status).toBe(400);
      expect(Object.keys(over.body.fields ?? {})).toEqual(['modeConfig.timeoutMs']);
    });

    it('a deleted preset can no longer be used', async () => {
      expect((await save({ name: 'short-lived', councilModels: ['sim/a', 'sim/b'] })).status).toBe(201);
      expect((await start({ question: 'Q?', preset: 'short-lived' })).status).toBe(202);
      expect((await remove('short-lived')).status).toBe(204);
      const gone = await start({ question: 'Q?', preset: 'short-lived' });
      expect(gone.status).toBe(400);
      expect(gone.body.fields).toEqual({ preset: 'no preset named "short-lived"' });
    });

    it('the Idempotency-Key fingerprint is the request as sent: a retry answers the same after the preset changed', async () => {
      expect((await save({ name: 'idem', councilModels: ['sim/a', 'sim/b'] })).status).toBe(201);
      const key = `presets-${stack.id}`;
      const body = { question: 'Idempotent?', preset: 'idem' };
      const first = await start(body, alice, { 'idempotency-key': key });
      expect(first.status).toBe(202);
      expect((await save({ name: 'idem', councilModels: ['sim/c', 'sim/d'] })).status).toBe(200);
      const retry = await start(body, alice, { 'idempotency-key': key });
      expect(retry.status).toBe(202);
      expect(retry.body).toEqual(first.body);
      expect((await storedConfig(first.body.messageId)).councilModels).toEqual(['sim/a', 'sim/b']);
      const other = await start({ ...body, question: 'Another?' }, alice, { 'idempotency-key': key });
      expect(other.status).toBe(422);
    });

    it('over Socket.IO too (the web client starts deliberations there)', async () => {
      const socket = await stack.connect(alice);
      try {
        const ack = (await socket.emitWithAck('deliberate', { question: 'Q?', preset: 'panel' })) as
          DeliberationAccepted | { error: { fields?: Record<string, string> } };
        if ('error' in ack) throw new Error(JSON.stringify(ack));
        expect((await storedConfig(ack.messageId)).councilModels).toEqual(['sim/athena', 'sim/hermes']);
        const refused = await socket.emitWithAck('deliberate', { question: 'Q?', preset: 'nope' });
        expect(refused.error.fields).toEqual({ preset: 'no preset named "nope"' });
      } finally {
        socket.disconnect();
      }
    });

    it('a dry run plans the preset’s roster', async () => {
      const dry = await stack.api<DeliberationEstimate & ApiErrorBody>(
        'POST',
        '/api/deliberations?dryRun=true',
        {
          token: alice,
          body: { question: 'Q?', preset: 'panel' },
        },
      );
      expect(dry.status).toBe(200);
      expect(dry.body.models.map((m) => m.model).sort()).toEqual(['sim/apollo', 'sim/athena', 'sim/hermes']);
      const unknown = await stack.api<ApiErrorBody>('POST', '/api/deliberations?dryRun=true', {
        token: alice,
        body: { question: 'Q?', preset: 'nope' },
      });
      expect(unknown.status).toBe(400);
      expect(unknown.body.fields).toEqual({ preset: 'no preset named "nope"' });
    });

    it('batch defaults and items may name a preset; an unknown one names the item', async () => {
      const dry = await stack.api<BatchEstimate & ApiErrorBody>('POST', '/api/batches?dryRun=true', {
        token: alice,
        body: {
          defaults: { preset: 'panel' },
          items: [{ question: 'One?' }, { question: 'Two?', chairmanModel: 'sim/zeus' }],
        },
      });
      expect(dry.status).toBe(200);
      expect(dry.body.models.map((m) => m.model).sort()).toEqual([
        'sim/apollo',
        'sim/athena',
        'sim/hermes',
        'sim/zeus',
      ]);
      const bad = await stack.api<ApiErrorBody>('POST', '/api/batches', {
        token: alice,
        body: {
          defaults: { preset: 'panel' },
          items: [
            { question: 'One?' },
            { question: 'Two?', preset: 'nope' },
            { question: 'Three?', mode: 'vote' },
          ],
        },
      });
      expect(bad.status).toBe(400);
      expect(bad.body.fields).toEqual({
        'items[1].preset': 'no preset named "nope"',
        'items[2].mode': expect.stringMatching(
          /^preset "panel" is a council preset; a vote request cannot use it/,
        ),
      });
    });
  });
});
