import type { BatchAccepted, DeliberationView, Grade, Grading } from '@conclave/contracts';
import { gradeAnswer, type LocalGrading } from '@conclave/deliberation';
import { TestStack } from './support/harness';
import { until } from './support/wait';

/**
 * The model grader on the real stack (issue 37, item 1): a council graded by a roster of simulated
 * judges. Each answer's judges are asked after its stage's calls, as calls of that stage (stored in
 * model_calls with `grade:` keys: their tokens count in the deliberation's usage and calls), and
 * the judges' majority is stored with the answer's row, its reason said. The model grader's
 * agreement with the normalized exact grader is computed on the answers where both read a verdict.
 */
interface Row {
  message_id: string;
  stage_type: string;
  model: string | null;
  content: string;
  grade: Grade | null;
}

describe('the model grader: judges are Conclave calls, their majority is stored with each answer', () => {
  const stack = new TestStack({ WORKER_CONCURRENCY: '8' });
  beforeAll(() => stack.start(), 60_000);
  afterAll(() => stack.stop());

  const council = {
    mode: 'council',
    councilModels: ['sim/m1:acc70', 'sim/m2:acc70', 'sim/m3:acc70'],
    chairmanModel: 'sim/chair:follow',
  };
  const rowsOf = (messageIds: string[]): Promise<Row[]> =>
    stack.db.query(
      `SELECT message_id, stage_type, model, content, parsed_data->'grade' AS grade FROM deliberation_stages
       WHERE message_id = ANY($1::uuid[]) ORDER BY message_id, stage_order, participant NULLS FIRST, model`,
      [messageIds],
    );
  const judgeCalls = (messageId: string) =>
    stack.db.query(
      `SELECT stage, call_key, model, ok, prompt_tokens, completion_tokens FROM model_calls
       WHERE message_id = $1 AND call_key LIKE 'grade:%'`,
      [messageId],
    ) as Promise<{ stage: string; call_key: string; model: string; ok: boolean; prompt_tokens: number }[]>;

  it('a graded deliberation: every answer graded by two judges with a reason, the judges in usage and calls', async () => {
    const { messageId, events } = await stack.run({
      ...council,
      question: 'What is 17 times 23? End with a line FINAL ANSWER: <number>.',
      expected: '391',
      grader: { type: 'model', judges: ['sim/j1', 'sim/j2'] },
    });
    expect(events.at(-1)?.type).toBe('complete');
    const rows = await rowsOf([messageId]);
    const answers = rows.filter((r) => r.stage_type === 'stage1' || r.stage_type === 'stage3');
    expect(answers).toHaveLength(4);
    for (const answer of answers) {
      expect(answer.grade).toMatchObject({
        grader: 'model',
        verdict: expect.stringMatching(/^(in)?correct$/),
      });
      // Two truthful judges agree: the reason gives the tally and one judge's reason.
      expect(answer.grade?.reason).toMatch(
        /^judges: (2 correct, 0|0 correct, 2) incorrect; sim\/j1: the final answer /,
      );
    }
    for (const ranking of rows.filter((r) => r.stage_type === 'stage2')) expect(ranking.grade).toBeNull();

    // Each distinct answer judged once by each judge, in its own stage, and stored like any call.
    const calls = await judgeCalls(messageId);
    const distinct = new Set(answers.map((a) => `${a.stage_type}|${a.content}`)).size;
    expect(calls).toHaveLength(2 * distinct);
    expect(new Set(calls.map((c) => c.call_key)).size).toBe(calls.length);
    expect(calls.every((c) => c.ok && c.prompt_tokens > 0)).toBe(true);
    expect(calls.map((c) => c.model).sort()).toEqual(
      [...Array(distinct).fill('sim/j1'), ...Array(distinct).fill('sim/j2')].sort(),
    );
    expect(new Set(calls.map((c) => c.stage))).toEqual(new Set(['stage1', 'stage3']));

    // The usage counts them: the view's usage is every call's, the judges' included.
    const view = (await stack.api<DeliberationView>('GET', `/api/deliberations/${messageId}`)).body;
    const [all] = await stack.db.query(
      `SELECT SUM(prompt_tokens)::int AS prompt, SUM(prompt_tokens) FILTER (WHERE call_key LIKE 'grade:%')::int AS judges
       FROM model_calls WHERE message_id = $1`,
      [messageId],
    );
    expect(view.usage.promptTokens).toBe(all.prompt);
    expect(all.judges).toBeGreaterThan(0);
    expect(view.calls.filter((c) => c.model === 'sim/j1' || c.model === 'sim/j2')).toHaveLength(calls.length);
    // And the result view shows the model's grades as stored.
    expect(view.grades?.answers.map((a) => a.grade.grader)).toEqual(answers.map(() => 'model'));
  }, 120_000);

  it('a judge that always flips ties the roster: every answer unreadable, the split said', async () => {
    const { messageId, events } = await stack.run({
      ...council,
      question: 'What is 12 times 12? End with a line FINAL ANSWER: <number>.',
      expected: '144',
      grader: { type: 'model', judges: ['sim/j1', 'sim/j2:acc0'] },
    });
    expect(events.at(-1)?.type).toBe('complete');
    const answers = (await rowsOf([messageId])).filter((r) => r.grade !== null);
    expect(answers).toHaveLength(4);
    for (const answer of answers)
      expect(answer.grade).toEqual({
        verdict: 'unreadable',
        grader: 'model',
        reason: 'the judges split evenly (1 correct, 1 incorrect)',
      });
  }, 120_000);

  it('a batch of 20 items: the model grader agrees with the exact grader on every answer both read', async () => {
    const items = Array.from({ length: 20 }, (_, i) => ({
      question: `What is ${i + 4} times ${(i % 5) + 3}? End with a line FINAL ANSWER: <number>.`,
      expected: String((i + 4) * ((i % 5) + 3)),
    }));
    const accepted = await stack.api<BatchAccepted>('POST', '/api/batches', {
      body: {
        name: 'model graded',
        defaults: { ...council, grader: { type: 'model', judges: ['sim/j1', 'sim/j2', 'sim/j3'] } },
        items,
        concurrency: 8,
      },
    });
    expect(accepted.status).toBe(202);
    const { batchId } = accepted.body;
    await until(
      async () => {
        const [batch] = await stack.db.query(`SELECT status FROM batches WHERE id = $1`, [batchId]);
        return batch?.status === 'complete';
      },
      'the batch',
      300_000,
    );
    const messages: { id: string; batch_index: number }[] = await stack.db.query(
      `SELECT id, batch_index FROM messages WHERE batch_id = $1 AND role = 'assistant' AND status = 'complete'`,
      [batchId],
    );
    expect(messages).toHaveLength(20);
    const indexOf = new Map(messages.map((m) => [m.id, m.batch_index]));
    const answers = (await rowsOf(messages.map((m) => m.id))).filter(
      (r) => r.stage_type === 'stage1' || r.stage_type === 'stage3',
    );
    expect(answers).toHaveLength(80);
    // The exact grader (normalized text) applied to the same stored answers.
    let both = 0;
    let agree = 0;
    const verdicts = { correct: 0, incorrect: 0 };
    for (const answer of answers) {
      const expected = items[indexOf.get(answer.message_id) as number].expected;
      const exact = gradeAnswer(answer.content, {
        expected,
        grader: { type: 'normalized' },
      } as Grading as LocalGrading);
      const model = answer.grade;
      expect(model?.grader).toBe('model');
      if (!model || model.verdict === 'unreadable' || exact.verdict === 'unreadable') continue;
      both++;
      if (model.verdict === exact.verdict) agree++;
      verdicts[model.verdict]++;
    }
    // Every answer ends with a FINAL ANSWER line, and three truthful judges read it as the exact
    // grader does: agreement 100 % on all 80, with right and wrong answers both present.
    expect(both).toBe(80);
    expect(agree / both).toBe(1);
    expect(verdicts.correct).toBeGreaterThan(10);
    expect(verdicts.incorrect).toBeGreaterThan(5);

    // The batch's usage includes the judges' calls.
    const [usage] = await stack.db.query(
      `SELECT COUNT(*) FILTER (WHERE call_key LIKE 'grade:%')::int AS judges, COUNT(*)::int AS total
       FROM model_calls WHERE message_id = ANY($1::uuid[])`,
      [messages.map((m) => m.id)],
    );
    expect(usage.judges).toBeGreaterThanOrEqual(3 * 60);
    expect(usage.judges).toBeLessThanOrEqual(3 * 80);
  }, 400_000);

  it('refuses a model grader with no judge, more than five, or a malformed judge id (400 naming the field)', async () => {
    const ask = (grader: unknown) =>
      stack.api<{ fields?: Record<string, string> }>('POST', '/api/deliberations', {
        body: { ...council, question: 'What is 2 plus 2?', expected: '4', grader },
      });
    const none = await ask({ type: 'model', judges: [] });
    expect(none.status).toBe(400);
    expect(Object.keys(none.body.fields ?? {})).toEqual(['grader.judges']);
    const six = await ask({ type: 'model', judges: ['sim/a', 'sim/b', 'sim/c', 'sim/d', 'sim/e', 'sim/f'] });
    expect(six.status).toBe(400);
    expect(Object.keys(six.body.fields ?? {})).toEqual(['grader.judges']);
    const bad = await ask({ type: 'model', judges: ['sim/a', 'nonsense'] });
    expect(bad.status).toBe(400);
    expect(Object.keys(bad.body.fields ?? {})).toEqual(['grader.judges[1]']);
  }, 60_000);
});
