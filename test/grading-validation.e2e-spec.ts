import type { BatchAccepted } from '@conclave/contracts';
import { TestStack } from './support/harness';

/**
 * Graded items (issue 37, item 1): a deliberation or a batch item may carry `expected` and
 * `grader`. A bad pair is a 400 naming the field (a batch's: the item), with nothing stored; a good
 * one is kept in the item's user message config, in its grader's form, for grading to read, and
 * changes nothing else: the deliberation's own config and its run are as without it.
 */
interface ErrorBody {
  statusCode: number;
  message: string;
  fields?: Record<string, string>;
}

const COUNCIL = { councilModels: ['sim/a', 'sim/b'], chairmanModel: 'sim/a' };

describe('graded items: expected answers and graders, validated and stored', () => {
  const stack = new TestStack();
  beforeAll(() => stack.start(), 60_000);
  afterAll(() => stack.stop());

  const counts = () =>
    stack.db.query(
      `SELECT (SELECT COUNT(*)::int FROM conversations) AS c, (SELECT COUNT(*)::int FROM messages) AS m,
              (SELECT COUNT(*)::int FROM batches) AS b`,
    );
  const userConfigOf = async (messageId: string): Promise<unknown> => {
    const [row] = await stack.db.query(
      `SELECT u.config FROM messages a JOIN messages u
         ON u.conversation_id = a.conversation_id AND u.turn = a.turn AND u.role = 'user'
       WHERE a.id = $1`,
      [messageId],
    );
    return row.config;
  };

  it('refuses a single deliberation whose expected answer does not fit its grader, naming the field', async () => {
    const before = await counts();
    const cases: [Record<string, unknown>, Record<string, string | RegExp>][] = [
      [
        { expected: 'twelve', grader: { type: 'numeric' } },
        { expected: /^for a numeric grader, expected must be a number .*got "twelve"$/ },
      ],
      [
        { expected: 'E', grader: { type: 'choice', options: ['Paris', 'London', 'Rome', 'Madrid'] } },
        {
          expected: `for a choice grader, expected must be one of the options' letters (A–D) or one option's text, got "E"`,
        },
      ],
      [
        { expected: 'x', grader: { type: 'regex', pattern: '(a+)+$', group: 0 } },
        { 'grader.pattern': /repeated group/ },
      ],
      [
        { expected: 'x', grader: { type: 'regex', pattern: '([a-z]', group: 1 } },
        { 'grader.pattern': /not a valid/ },
      ],
      [
        { expected: 'x', grader: { type: 'regex', pattern: '(\\w)\\1', group: 1 } },
        { 'grader.pattern': /backreferences/ },
      ],
      [{ grader: { type: 'exact' } }, { expected: /^expected is required with a exact grader/ }],
      [{ expected: true }, { expected: 'expected must be the expected answer, as text or a number' }],
      [{ expected: 'x', grader: { type: 'fuzzy' } }, { 'grader.type': /^grader.type must be one of exact,/ }],
      [
        { expected: 'x', grader: { type: 'model', judges: ['not a model'] } },
        { 'grader.judges[0]': /provider\/name/ },
      ],
    ];
    for (const [grading, fields] of cases) {
      const response = await stack.api<ErrorBody>('POST', '/api/deliberations', {
        body: { question: 'What is it?', ...COUNCIL, ...grading },
      });
      expect({ grading, status: response.status }).toEqual({ grading, status: 400 });
      expect(Object.keys(response.body.fields ?? {}).sort()).toEqual(Object.keys(fields).sort());
      for (const [field, message] of Object.entries(fields))
        expect(response.body.fields?.[field]).toMatch(message);
    }
    // Named alongside the request's other problems.
    const both = await stack.api<ErrorBody>('POST', '/api/deliberations', {
      body: { question: '', expected: 'twelve', grader: { type: 'numeric' } },
    });
    expect(both.status).toBe(400);
    expect(Object.keys(both.body.fields ?? {}).sort()).toEqual(['expected', 'question']);
    // The socket's ack names them too.
    const socket = await stack.connect();
    try {
      const ack = await socket.emitWithAck('deliberate', {
        question: 'q',
        ...COUNCIL,
        expected: 'Z',
        grader: { type: 'choice', options: ['a', 'b'] },
      });
      expect(ack.error?.fields?.expected).toMatch(/options' letters \(A–B\)/);
    } finally {
      socket.disconnect();
    }
    expect(await counts()).toEqual(before);
  });

  it('keeps a valid expected answer and grader in the user message config, and runs as without them', async () => {
    const graded = await stack.run({
      question: 'What is 6 times 7?',
      ...COUNCIL,
      expected: '1,234.5',
      grader: { type: 'numeric', relativeTolerance: 0.01 },
    });
    const plain = await stack.run({ question: 'What is 6 times 7?', ...COUNCIL });
    expect(await userConfigOf(graded.messageId)).toEqual({
      expected: 1234.5,
      grader: { type: 'numeric', relativeTolerance: 0.01 },
    });
    expect(await userConfigOf(plain.messageId)).toBeNull();
    const [a, b] = await Promise.all(
      [graded, plain].map(async ({ messageId }) => {
        const [row] = await stack.db.query('SELECT status, config FROM messages WHERE id = $1', [messageId]);
        return row;
      }),
    );
    expect(a).toEqual(b);
    expect(a.status).toBe('complete');
    expect(graded.events.map((e) => e.type)).toEqual(plain.events.map((e) => e.type));

    // Defaults filled in: text without a grader is graded normalized; a choice is kept as its letter.
    const normalized = await stack.deliberate({
      question: 'Capital of France?',
      ...COUNCIL,
      expected: ' Paris ',
    });
    expect(await userConfigOf(normalized.messageId)).toEqual({
      expected: 'Paris',
      grader: { type: 'normalized' },
    });
    const choice = await stack.deliberate({
      question: 'Capital of France?',
      ...COUNCIL,
      expected: 'paris',
      grader: { type: 'choice', options: ['London', 'Paris'] },
    });
    expect(await userConfigOf(choice.messageId)).toEqual({
      expected: 'B',
      grader: { type: 'choice', options: ['London', 'Paris'] },
    });
    await stack.follow(normalized.messageId);
    await stack.follow(choice.messageId);

    // A follow-up does not inherit the previous turn's expected answer.
    const followUp = await stack.run({ question: 'And of Italy?', conversationId: graded.conversationId });
    expect(await userConfigOf(followUp.messageId)).toBeNull();
  }, 180_000);

  it('refuses expected and grader in a preset', async () => {
    const response = await stack.api<ErrorBody>('POST', '/api/presets', {
      body: { name: 'graded', mode: 'council', ...COUNCIL, expected: 'x', grader: { type: 'exact' } },
    });
    expect(response.status).toBe(400);
    expect(response.body.fields?.expected).toMatch(/not part of a preset/);
    expect(response.body.fields?.grader).toMatch(/not part of a preset/);
  });

  it('refuses a batch whose items carry bad expected answers, naming each item, storing nothing', async () => {
    const before = await counts();
    const response = await stack.api<ErrorBody>('POST', '/api/batches', {
      body: {
        defaults: { ...COUNCIL, grader: { type: 'numeric' } },
        items: [
          { question: 'q0', expected: 42 },
          { question: 'q1', expected: 'forty-two' },
          { question: 'q2' },
          { question: 'q3', expected: 'x', grader: { type: 'regex', pattern: '(?:\\w+\\s?)*$', group: 0 } },
          { question: 'q4', expected: 'E', grader: { type: 'choice', options: ['a', 'b', 'c'] } },
          { question: 'q5', expected: '1e3' },
        ],
      },
    });
    expect(response.status).toBe(400);
    expect(response.body.message).toBe('4 of 6 items are invalid: items 1, 2, 3, 4');
    expect(Object.keys(response.body.fields ?? {}).sort()).toEqual([
      'items[1].expected',
      'items[2].expected',
      'items[3].grader.pattern',
      'items[4].expected',
    ]);
    expect(response.body.fields?.['items[1].expected']).toMatch(/numeric grader, expected must be a number/);
    expect(response.body.fields?.['items[2].expected']).toMatch(/expected is required with a numeric grader/);
    expect(response.body.fields?.['items[3].grader.pattern']).toMatch(/repeated group/);
    expect(response.body.fields?.['items[4].expected']).toMatch(/A–C/);

    const sharedAnswer = await stack.api<ErrorBody>('POST', '/api/batches', {
      body: { defaults: { ...COUNCIL, expected: 'x' }, items: [{ question: 'q' }] },
    });
    expect(sharedAnswer.status).toBe(400);
    expect(sharedAnswer.body.fields).toEqual({
      'defaults.expected': 'each item has its own expected answer',
    });
    expect(await counts()).toEqual(before);
  });

  it('stores each batch item its expected answer and grader (a default grader included)', async () => {
    const response = await stack.api<BatchAccepted>('POST', '/api/batches', {
      body: {
        defaults: { ...COUNCIL, grader: { type: 'numeric', absoluteTolerance: 0.5 } },
        items: [
          { question: 'q0', expected: 42, key: 'k0' },
          { question: 'q1', expected: '$3' },
          { question: 'q2', expected: 'b', grader: { type: 'choice', options: ['x', 'y'] } },
          { question: 'q3', grader: null },
        ],
      },
    });
    expect(response.status).toBe(202);
    const rows: { batch_index: number; config: unknown }[] = await stack.db.query(
      `SELECT a.batch_index, u.config FROM messages a JOIN messages u
         ON u.conversation_id = a.conversation_id AND u.role = 'user'
       WHERE a.batch_id = $1 ORDER BY a.batch_index`,
      [response.body.batchId],
    );
    expect(rows.map((r) => r.config)).toEqual([
      { key: 'k0', expected: 42, grader: { type: 'numeric', absoluteTolerance: 0.5 } },
      { expected: 3, grader: { type: 'numeric', absoluteTolerance: 0.5 } },
      { expected: 'B', grader: { type: 'choice', options: ['x', 'y'] } },
      null,
    ]);
  });

  it('reads an expected column from a CSV upload, graded by the defaults grader, and names a bad row', async () => {
    const upload = (csv: string) =>
      fetch(
        `${stack.baseUrl}/api/batches?defaults=${encodeURIComponent(
          JSON.stringify({ ...COUNCIL, grader: { type: 'numeric' } }),
        )}`,
        { method: 'POST', headers: { 'content-type': 'text/csv' }, body: csv },
      );
    const bad = await upload('question,expected\nq0,42\nq1,lots\n');
    expect(bad.status).toBe(400);
    const refused = (await bad.json()) as ErrorBody;
    expect(refused.message).toBe('1 of 2 items are invalid: items 1');
    expect(Object.keys(refused.fields ?? {})).toEqual(['items[1].expected']);

    const good = await upload('question,expected,key\nq0,"1,234.5",a\nq1,-3,b\n');
    expect(good.status).toBe(202);
    const { batchId } = (await good.json()) as BatchAccepted;
    const rows: { config: unknown }[] = await stack.db.query(
      `SELECT u.config FROM messages a JOIN messages u
         ON u.conversation_id = a.conversation_id AND u.role = 'user'
       WHERE a.batch_id = $1 ORDER BY a.batch_index`,
      [batchId],
    );
    expect(rows.map((r) => r.config)).toEqual([
      { key: 'a', expected: 1234.5, grader: { type: 'numeric' } },
      { key: 'b', expected: -3, grader: { type: 'numeric' } },
    ]);
  });
});
