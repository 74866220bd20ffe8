import type { DeliberationGrades, DeliberationView } from '@conclave/contracts';
import { TestStack } from './support/harness';

/**
 * Grading on the OpenAI-compatible endpoint (issue 37 item 7): `expected` and `grader` as extension
 * fields of a /v1/chat/completions body, checked by the REST envelope's validator, and the grades
 * in the answer's `conclave` field, on the real stack with the simulated panel.
 */

interface Completion {
  choices: { message: { content: string } }[];
  conclave: { messageId: string; status: string; grades?: DeliberationGrades };
}
interface OpenAiErrorBody {
  error: { message: string; type: string; param: string | null; code: string | null };
}

describe('/v1/chat/completions with an expected answer', () => {
  const stack = new TestStack({
    AUTH_MODE: 'apikey',
    // The default council: one member always right, one never, a chairman keeping its own (right) answer.
    DEFAULT_COUNCIL_MODELS: 'sim/athena:acc100,sim/hermes:acc0',
    DEFAULT_CHAIRMAN_MODEL: 'sim/chair:keep:acc100',
    DEFAULT_VOTE_MODELS: 'sim/v1:acc100,sim/v2:acc100,sim/v3:acc0',
  });
  let key: string;

  const chat = (body: Record<string, unknown>) =>
    fetch(`${stack.baseUrl}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
      body: JSON.stringify(body),
    });
  const question = [{ role: 'user', content: 'What is 6 times 7?' }];
  const view = async (messageId: string) => {
    const response = await stack.api<DeliberationView>('GET', `/api/deliberations/${messageId}`, {
      token: key,
    });
    expect(response.status).toBe(200);
    return response.body;
  };
  const byAnswer = (grades: DeliberationGrades | undefined) =>
    Object.fromEntries((grades?.answers ?? []).map((a) => [`${a.stageType} ${a.model}`, a.grade.verdict]));

  beforeAll(async () => {
    await stack.start();
    key = await stack.createUser('grader');
  });
  afterAll(() => stack.stop());

  it('answers with every answer’s grade and the final one in `conclave.grades`, as the REST view has them', async () => {
    const response = await chat({
      model: 'conclave/council',
      messages: question,
      expected: '42',
      grader: { type: 'numeric' },
    });
    expect(response.status).toBe(200);
    const answer = (await response.json()) as Completion;
    expect(answer.conclave.status).toBe('complete');
    expect(answer.choices[0].message.content).toMatch(/FINAL ANSWER: 42$/);
    expect(byAnswer(answer.conclave.grades)).toEqual({
      'stage1 sim/athena:acc100': 'correct',
      'stage1 sim/hermes:acc0': 'incorrect',
      'stage3 sim/chair:keep:acc100': 'correct',
    });
    expect(answer.conclave.grades?.final).toMatchObject({
      stageType: 'stage3',
      role: 'chairman',
      grade: { verdict: 'correct', extracted: '42', grader: 'numeric' },
    });
    const stored = await view(answer.conclave.messageId);
    expect(byAnswer(stored.grades)).toEqual(byAnswer(answer.conclave.grades));
    expect(stored.grades?.final).toEqual(answer.conclave.grades?.final);
  });

  it('a streamed answer’s last chunk carries the grades; the default grader is normalized', async () => {
    const response = await chat({ model: 'conclave/vote', messages: question, expected: '42', stream: true });
    expect(response.status).toBe(200);
    const chunks = (await response.text())
      .split('\n')
      .filter((line) => line.startsWith('data: ') && line !== 'data: [DONE]')
      .map((line) => JSON.parse(line.slice(6)) as Partial<Completion>);
    const last = chunks.filter((c) => c.conclave !== undefined).at(-1);
    expect(last?.conclave?.status).toBe('complete');
    const grades = last?.conclave?.grades;
    expect(grades?.answers.filter((a) => a.stageType === 'initial_answer')).toHaveLength(3);
    for (const a of grades?.answers ?? []) expect(a.grade.grader).toBe('normalized');
    // Two of three are right and vote for a right answer (following voters elect the majority's).
    expect(grades?.final?.grade.verdict).toBe('correct');
    expect((await view(last!.conclave!.messageId)).grades?.final).toEqual(grades?.final);
  });

  it('an ungraded request has no grades', async () => {
    const response = await chat({ model: 'conclave/council', messages: question });
    expect(response.status).toBe(200);
    const answer = (await response.json()) as Completion;
    expect(answer.conclave.status).toBe('complete');
    expect(answer.conclave.grades).toBeUndefined();
  });

  it('refuses a bad expected answer or grader with a 400 naming the field, starting nothing', async () => {
    const cases: [Record<string, unknown>, string, RegExp][] = [
      [{ expected: 'forty-two', grader: { type: 'numeric' } }, 'expected', /expected must be a number/],
      [{ expected: '42', grader: { type: 'telepathy' } }, 'grader.type', /grader/],
      [
        { expected: '42', grader: { type: 'numeric', absoluteTolerance: -1 } },
        'grader.absoluteTolerance',
        /at least 0/,
      ],
      [{ grader: { type: 'numeric' } }, 'expected', /expected is required/],
    ];
    const before = await stack.api<{ items?: unknown[] }>('GET', '/api/deliberations', { token: key });
    for (const [fields, param, message] of cases) {
      const response = await chat({ model: 'conclave/council', messages: question, ...fields });
      expect(response.status).toBe(400);
      const body = (await response.json()) as OpenAiErrorBody;
      expect(body.error.type).toBe('invalid_request_error');
      expect(body.error.param).toBe(param);
      expect(body.error.message).toMatch(message);
    }
    const after = await stack.api<{ items?: unknown[] }>('GET', '/api/deliberations', { token: key });
    expect(after.body).toEqual(before.body);
  });
});
