import { TestStack } from './support/harness';

interface ErrorBody {
  statusCode: number;
  error: string;
  message: string;
  fields?: Record<string, string>;
}

describe('bad input: 400 or 404 naming each offending field, nothing stored or enqueued', () => {
  const stack = new TestStack({ BODY_LIMIT: '64kb' });
  beforeAll(() => stack.start({ worker: false }), 60_000);
  afterAll(() => stack.stop());

  const counts = async () => ({
    db: await stack.db.query(
      `SELECT (SELECT COUNT(*)::int FROM conversations) AS c, (SELECT COUNT(*)::int FROM messages) AS m`,
    ),
    queue: await stack.queueCounts(),
  });

  const longQuestion = 'x'.repeat(20_001);
  const cases: [
    string,
    { body?: unknown; raw?: string; headers?: Record<string, string> },
    number,
    string[],
  ][] = [
    ['malformed JSON', { raw: '{"question": "hi",' }, 400, []],
    ['a JSON array body', { body: [1, 2] }, 400, ['body']],
    ['a missing question', { body: {} }, 400, ['question']],
    ['a question of the wrong type', { body: { question: 42 } }, 400, ['question']],
    ['an empty question', { body: { question: '   ' } }, 400, ['question']],
    ['an oversized question', { body: { question: longQuestion } }, 400, ['question']],
    ['an oversized body', { raw: JSON.stringify({ question: 'q', pad: 'y'.repeat(70_000) }) }, 413, []],
    ['an unknown mode', { body: { question: 'q', mode: 'parliament' } }, 400, ['mode']],
    ['an unknown top-level field', { body: { question: 'q', temperature: 2 } }, 400, ['temperature']],
    [
      'an unknown modeConfig field',
      { body: { question: 'q', modeConfig: { rounds: 3 } } },
      400,
      ['modeConfig.rounds'],
    ],
    ['modeConfig of the wrong type', { body: { question: 'q', modeConfig: 'fast' } }, 400, ['modeConfig']],
    [
      'councilModels of the wrong type',
      { body: { question: 'q', councilModels: 'sim/a' } },
      400,
      ['councilModels'],
    ],
    [
      'a malformed model id',
      { body: { question: 'q', councilModels: ['sim/a', 'gpt4'] } },
      400,
      ['councilModels'],
    ],
    [
      'a malformed chairman id',
      { body: { question: 'q', chairmanModel: 'no slash' } },
      400,
      ['chairmanModel'],
    ],
    ['too few council models', { body: { question: 'q', councilModels: ['sim/a'] } }, 400, ['councilModels']],
    [
      'too many council models',
      { body: { question: 'q', councilModels: ['a', 'b', 'c', 'd', 'e', 'f', 'g'].map((m) => `sim/${m}`) } },
      400,
      ['councilModels'],
    ],
    [
      'a duplicated council model',
      { body: { question: 'q', councilModels: ['sim/a', 'sim/a'] } },
      400,
      ['councilModels'],
    ],
    [
      'too few models inside modeConfig',
      { body: { question: 'q', modeConfig: { councilModels: ['sim/a'] } } },
      400,
      ['modeConfig.councilModels'],
    ],
    [
      'a timeout out of range',
      { body: { question: 'q', modeConfig: { timeoutMs: 5 } } },
      400,
      ['modeConfig.timeoutMs'],
    ],
    [
      'conflicting rosters at top level and in modeConfig',
      {
        body: {
          question: 'q',
          councilModels: ['sim/a', 'sim/b'],
          modeConfig: { councilModels: ['sim/c', 'sim/d'] },
        },
      },
      400,
      ['councilModels'],
    ],
    [
      'a conversationId that is not a UUID (no such conversation)',
      { body: { question: 'q', conversationId: 'abc' } },
      404,
      [],
    ],
    [
      'a conversationId of the wrong type',
      { body: { question: 'q', conversationId: 7 } },
      400,
      ['conversationId'],
    ],
    ['a __proto__ field', { raw: '{"question":"q","__proto__":{"admin":true}}' }, 400, ['__proto__']],
    [
      'a constructor field in modeConfig',
      { body: { question: 'q', modeConfig: { constructor: 1 } } },
      400,
      ['modeConfig.constructor'],
    ],
    ['a toString field', { body: { question: 'q', toString: 'x' } }, 400, ['toString']],
    ['a NUL character in the question', { body: { question: 'a\u0000b' } }, 400, ['question']],
    [
      'a NUL character inside modeConfig',
      { body: { question: 'q', modeConfig: { councilModels: ['sim/a', 'sim/b\u0000'] } } },
      400,
      ['modeConfig.councilModels', 'modeConfig.councilModels[1]'],
    ],
    [
      'several problems at once',
      { body: { question: '', mode: 'council', councilModels: ['bad'], extra: true } },
      400,
      ['question', 'councilModels', 'extra'],
    ],
    [
      'an unknown conversation',
      { body: { question: 'q', conversationId: '11111111-1111-4111-8111-111111111111' } },
      404,
      [],
    ],
  ];

  it.each(cases)('%s', async (_name, request, status, fields) => {
    const before = await counts();
    const response = await stack.api<ErrorBody>('POST', '/api/deliberations', request);
    expect(response.status).toBe(status);
    expect(response.body).toMatchObject({
      statusCode: status,
      error: expect.any(String),
      message: expect.any(String),
    });
    if (fields.length > 0) expect(Object.keys(response.body.fields ?? {}).sort()).toEqual([...fields].sort());
    for (const field of fields) expect(response.body.message).toContain(field);
    expect(await counts()).toEqual(before);
  });

  it('refuses a follow-up while the previous turn is still deliberating (409), storing nothing', async () => {
    const first = await stack.deliberate({ question: 'First', councilModels: ['sim/a', 'sim/b'] });
    const before = await counts();
    const response = await stack.api<ErrorBody>('POST', '/api/deliberations', {
      body: { question: 'Too soon', conversationId: first.conversationId },
    });
    expect(response.status).toBe(409);
    expect(response.body.message).toMatch(/still deliberating/);
    expect(await counts()).toEqual(before);
  });

  it('the socket deliberate ack names the fields too', async () => {
    const socket = await stack.connect();
    const ack = await socket.emitWithAck('deliberate', { question: 'q', councilModels: ['x'] });
    expect(ack).toEqual({
      error: {
        statusCode: 400,
        message: expect.stringContaining('councilModels'),
        fields: { councilModels: expect.any(String) },
      },
    });
  });

  it('unknown deliberation ids are 404, never 500', async () => {
    expect((await stack.api('GET', '/api/deliberations/not-a-uuid')).status).toBe(404);
    expect((await stack.api('GET', '/api/deliberations/11111111-1111-4111-8111-111111111111')).status).toBe(
      404,
    );
    expect(
      (await stack.api('GET', '/api/deliberations/11111111-1111-4111-8111-111111111111/events')).status,
    ).toBe(404);
    expect((await stack.api('GET', '/api/conversations/nope')).status).toBe(404);
    const dashes = '-'.repeat(36);
    expect((await stack.api('GET', `/api/conversations/${dashes}`)).status).toBe(404);
    expect((await stack.api('DELETE', `/api/conversations/${dashes}`)).status).toBe(404);
    expect((await stack.api('GET', `/api/deliberations/${dashes}`)).status).toBe(404);
  });

  it('serves the OpenAPI document', async () => {
    const docs = await stack.api<{ paths: Record<string, unknown> }>('GET', '/api/docs-json');
    expect(docs.status).toBe(200);
    expect(Object.keys(docs.body.paths)).toEqual(
      expect.arrayContaining(['/api/deliberations', '/api/deliberations/{messageId}', '/api/conversations']),
    );
    expect((await stack.api('GET', '/api/docs')).status).toBe(200);
  });
});
