import type { BatchAccepted, BatchResultLine, DeliberationView, Grade } from '@conclave/contracts';
import { parse } from 'csv-parse/sync';
import { TestStack } from './support/harness';
import { until } from './support/wait';

/**
 * Graded runs on the real stack (issue 37, item 2): a graded turn's expected answer reaches its
 * model calls from the stored user message (the simulated accuracy directives then decide who is
 * right), and every answer is graded once, where it is produced, into its stage row's
 * `parsed_data.grade`, written by the stage write with the row. An ungraded run stores no grade.
 */
interface GradedRow {
  stage_type: string;
  model: string | null;
  role: string | null;
  grade: Grade | null;
}

describe('graded runs: expected answers reach the calls, every answer is graded and stored', () => {
  const stack = new TestStack({ WORKER_CONCURRENCY: '16' });
  beforeAll(() => stack.start(), 60_000);
  afterAll(() => stack.stop());

  const rowsOf = (messageId: string): Promise<GradedRow[]> =>
    stack.db.query(
      `SELECT stage_type, model, role, parsed_data->'grade' AS grade FROM deliberation_stages
       WHERE message_id = $1 ORDER BY stage_order, participant NULLS FIRST, model`,
      [messageId],
    );
  const verdicts = (rows: GradedRow[], stageType: string) =>
    rows.filter((r) => r.stage_type === stageType).map((r) => r.grade?.verdict ?? null);
  const views = new Map<GradedRow[], DeliberationView>();
  const graded = async (body: Record<string, unknown>) => {
    const { messageId, events } = await stack.run(body);
    expect(events.at(-1)?.type).toBe('complete');
    const rows = await rowsOf(messageId);
    views.set(rows, (await stack.api<DeliberationView>('GET', `/api/deliberations/${messageId}`)).body);
    return rows;
  };
  /** The view's grades agree with the stored rows: every graded row, the final one as said. */
  const expectViewGrades = (rows: GradedRow[], finalStage: RegExp) => {
    const grades = views.get(rows)?.grades;
    const stored = rows.filter((r) => r.grade !== null);
    // The same answers (rows of one stage without a seat are in the order they were stored, which
    // this query does not read: compared as sorted lists).
    const key = (row: (string | null | undefined)[]) => JSON.stringify(row);
    expect(grades?.answers.map((a) => key([a.stageType, a.model, a.grade.verdict])).sort()).toEqual(
      stored.map((r) => key([r.stage_type, r.model, r.grade?.verdict])).sort(),
    );
    // In stored order of stages: no answer of a later stage before one of an earlier stage.
    const order = grades?.answers.map((a) => stored.findIndex((r) => r.stage_type === a.stageType)) ?? [];
    expect(order).toEqual([...order].sort((a, b) => a - b));
    const lastFinal = stored.filter((r) => finalStage.test(r.stage_type)).at(-1);
    expect(grades?.final).toMatchObject({ stageType: lastFinal?.stage_type, grade: lastFinal?.grade });
  };

  it('a batch of 60 graded council items: members at 70 % are right on some items and wrong on others', async () => {
    const items = Array.from({ length: 60 }, (_, i) => ({
      question: `What is ${i + 3} times ${(i % 7) + 2}? End with a line FINAL ANSWER: <number>.`,
      expected: (i + 3) * ((i % 7) + 2),
    }));
    const accepted = await stack.api<BatchAccepted>('POST', '/api/batches', {
      body: {
        name: 'graded council',
        defaults: {
          mode: 'council',
          councilModels: ['sim/m1:acc70', 'sim/m2:acc70', 'sim/m3:acc70'],
          chairmanModel: 'sim/chair:follow',
        },
        items,
        concurrency: 16,
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
    const rows: (GradedRow & { batch_index: number; status: string })[] = await stack.db.query(
      `SELECT m.batch_index, m.status, s.stage_type, s.model, s.role, s.parsed_data->'grade' AS grade
       FROM messages m JOIN deliberation_stages s ON s.message_id = m.id
       WHERE m.batch_id = $1 AND m.role = 'assistant' AND s.stage_type IN ('stage1', 'stage2', 'stage3')`,
      [batchId],
    );
    expect(new Set(rows.filter((r) => r.status === 'complete').map((r) => r.batch_index)).size).toBe(60);
    const members = rows.filter((r) => r.stage_type === 'stage1');
    expect(members).toHaveLength(180);
    for (const model of ['sim/m1:acc70', 'sim/m2:acc70', 'sim/m3:acc70']) {
      const mine = members.filter((r) => r.model === model).map((r) => r.grade?.verdict);
      expect(mine).toHaveLength(60);
      // Graded numerically, never unreadable (each simulated answer ends with a FINAL ANSWER line);
      // right on some items and wrong on others: the expected answer reached the simulator.
      expect(mine.every((v) => v === 'correct' || v === 'incorrect')).toBe(true);
      const right = mine.filter((v) => v === 'correct').length;
      expect(right).toBeGreaterThan(25);
      expect(right).toBeLessThan(58);
    }
    for (const member of members) expect(member.grade).toMatchObject({ grader: 'numeric' });
    const chair = rows.filter((r) => r.stage_type === 'stage3');
    expect(chair).toHaveLength(60);
    // The chairman follows the members' majority: right exactly where two or three of them are.
    for (const synthesis of chair) {
      const right = members.filter(
        (m) => m.batch_index === synthesis.batch_index && m.grade?.verdict === 'correct',
      ).length;
      if (right >= 2)
        expect({ item: synthesis.batch_index, v: synthesis.grade?.verdict }).toEqual({
          item: synthesis.batch_index,
          v: 'correct',
        });
    }
    // Rankings are not answers: no grade.
    for (const ranking of rows.filter((r) => r.stage_type === 'stage2')) expect(ranking.grade).toBeNull();

    // The exports: each item's expected answer and its panel's final grade, as stored.
    const finalOf = new Map(chair.map((c) => [c.batch_index, c.grade?.verdict]));
    const jsonl = await fetch(`${stack.baseUrl}/api/batches/${batchId}/results?format=jsonl`);
    const lines = (await jsonl.text())
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as BatchResultLine);
    expect(lines).toHaveLength(60);
    for (const line of lines) {
      expect(line.expected).toBe(items[line.index].expected);
      expect(line.grade?.verdict).toBe(finalOf.get(line.index));
    }
    const csv = await (await fetch(`${stack.baseUrl}/api/batches/${batchId}/results?format=csv`)).text();
    const sheet = parse(csv, { columns: true }) as Record<string, string>[];
    expect(sheet.map((r) => [Number(r.index), Number(r.expected), r.verdict])).toEqual(
      lines.map((l) => [l.index, l.expected, l.grade?.verdict]),
    );
    const long = (
      await (await fetch(`${stack.baseUrl}/api/batches/${batchId}/results?shape=long&format=jsonl`)).text()
    )
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    const answers = long.filter((r) => r.kind === 'answer');
    expect(answers).toHaveLength(60 * 4);
    expect(answers.filter((r) => r.subject === 'final')).toHaveLength(60);
    for (const r of long) expect(r.expected).toBe(items[r.index as number].expected);
    for (const outcome of long.filter((r) => r.kind === 'outcome'))
      expect(outcome.grade).toBe(finalOf.get(outcome.index as number));
    const memberRight = answers.filter((r) => r.stage === 'stage1' && r.grade === 'correct').length;
    expect(memberRight).toBe(members.filter((m) => m.grade?.verdict === 'correct').length);
  }, 360_000);

  it('an ungraded batch’s exports are as before: no expected or verdict columns, no grades', async () => {
    const accepted = await stack.api<BatchAccepted>('POST', '/api/batches', {
      body: {
        defaults: { mode: 'council', councilModels: ['sim/a', 'sim/b'], chairmanModel: 'sim/chair' },
        items: [{ question: 'What is 2 times 3?' }, { question: 'What is 3 times 4?' }],
      },
    });
    expect(accepted.status).toBe(202);
    const { batchId } = accepted.body;
    await until(async () => {
      const [batch] = await stack.db.query(`SELECT status FROM batches WHERE id = $1`, [batchId]);
      return batch?.status === 'complete';
    }, 'the batch');
    const csv = await (await fetch(`${stack.baseUrl}/api/batches/${batchId}/results?format=csv`)).text();
    expect(csv.split('\n')[0]).not.toMatch(/expected|verdict/);
    const jsonl = await (await fetch(`${stack.baseUrl}/api/batches/${batchId}/results?format=jsonl`)).text();
    for (const line of jsonl.trim().split('\n')) {
      expect(JSON.parse(line)).not.toHaveProperty('expected');
      expect(JSON.parse(line)).not.toHaveProperty('grade');
    }
    const long = await (
      await fetch(`${stack.baseUrl}/api/batches/${batchId}/results?shape=long&format=jsonl`)
    ).text();
    for (const line of long.trim().split('\n')) {
      const row = JSON.parse(line) as Record<string, unknown>;
      expect(row.kind).not.toBe('answer');
      expect([row.expected, row.grade]).toEqual([null, null]);
    }
  }, 120_000);

  it('council: an always-right member, a never-right one, and the synthesis', async () => {
    const rows = await graded({
      question: 'What is 17 times 23?',
      councilModels: ['sim/a:acc100', 'sim/b:acc0'],
      chairmanModel: 'sim/chair:keep:acc100',
      expected: 391,
    });
    const stage1 = Object.fromEntries(
      rows.filter((r) => r.stage_type === 'stage1').map((r) => [r.model, r.grade?.verdict]),
    );
    expect(stage1).toEqual({ 'sim/a:acc100': 'correct', 'sim/b:acc0': 'incorrect' });
    expect(rows.find((r) => r.stage_type === 'stage1' && r.model === 'sim/a:acc100')?.grade).toMatchObject({
      verdict: 'correct',
      extracted: '391',
      grader: 'numeric',
    });
    expect(verdicts(rows, 'stage3')).toEqual(['correct']);
    expect(verdicts(rows, 'stage2')).toEqual([null, null]);
    expectViewGrades(rows, /^stage3$/);
  }, 120_000);

  it('vote: every answer and the winner', async () => {
    const rows = await graded({
      question: 'What is 17 times 23?',
      mode: 'vote',
      modeConfig: { models: ['sim/a:acc100', 'sim/b:acc100', 'sim/c:acc0'] },
      expected: '391',
      grader: { type: 'numeric' },
    });
    expect(verdicts(rows, 'initial_answer').sort()).toEqual(['correct', 'correct', 'incorrect']);
    expect(verdicts(rows, 'vote_winner')).toEqual(['correct']);
    expect(verdicts(rows, 'vote').every((v) => v === null)).toBe(true);
    expectViewGrades(rows, /^vote_winner$/);
  }, 120_000);

  it('debate: every round-1 answer, every revised answer and the winner', async () => {
    const rows = await graded({
      question: 'What is 17 times 23?',
      mode: 'debate',
      modeConfig: { models: ['sim/a:acc100', 'sim/b:acc100', 'sim/c:acc0'] },
      expected: 391,
    });
    expect(verdicts(rows, 'initial_answer').sort()).toEqual(['correct', 'correct', 'incorrect']);
    // Following revisers take the majority's answer: the wrong one is fixed by its revision.
    expect(verdicts(rows, 'revision')).toEqual(['correct', 'correct', 'correct']);
    expect(verdicts(rows, 'debate_winner')).toEqual(['correct']);
    expect(verdicts(rows, 'debate_vote').every((v) => v === null)).toBe(true);
    expectViewGrades(rows, /^debate_winner$/);
  }, 120_000);

  it('delphi: each panelist’s estimates and each round’s panel value, on the numeric grader', async () => {
    const rows = await graded({
      question: 'How many software engineers will be employed globally by 2030?',
      mode: 'delphi',
      modeConfig: { panelistModels: ['sim/p1', 'sim/p2', 'sim/p3'], facilitatorModel: 'sim/f' },
      expected: 30_000_000,
      grader: { type: 'numeric', relativeTolerance: 0.5 },
    });
    const estimates = rows.filter((r) => /^round_\d+$/.test(r.stage_type));
    expect(estimates.length).toBeGreaterThanOrEqual(3);
    for (const estimate of estimates) expect(estimate.grade).toMatchObject({ grader: 'numeric' });
    const stats = rows.filter((r) => /^round_\d+_stats$/.test(r.stage_type));
    expect(stats.length).toBe(estimates.length / 3);
    for (const panel of stats) expect(panel.grade?.verdict).toMatch(/^(correct|incorrect)$/);
    expectViewGrades(rows, /^round_\d+_stats$/);
    expect(rows.filter((r) => r.stage_type === 'classify' || r.stage_type === 'synthesis')).toEqual(
      expect.arrayContaining([expect.objectContaining({ grade: null })]),
    );
  }, 120_000);

  it('delphi with acc<N>: round-1 estimates right as told, the panel value right with a majority (exact numeric)', async () => {
    const rows = await graded({
      question: 'How many seats does the hall have?',
      mode: 'delphi',
      modeConfig: {
        panelistModels: ['sim/p1:acc100', 'sim/p2:acc100', 'sim/p3:acc0'],
        facilitatorModel: 'sim/f',
      },
      expected: 1250,
      grader: { type: 'numeric' },
    });
    expect(verdicts(rows, 'round_1').sort()).toEqual(['correct', 'correct', 'incorrect']);
    const stats = rows.filter((r) => /^round_\d+_stats$/.test(r.stage_type));
    expect(stats.length).toBeGreaterThanOrEqual(1);
    // The median is the expected value from round 1 on, and stays: every panel value is right.
    for (const panel of stats) expect(panel.grade?.verdict).toBe('correct');
    expectViewGrades(rows, /^round_\d+_stats$/);
  }, 120_000);

  it('refuses a model grader without judges (400 naming the field), for a deliberation and a batch item', async () => {
    const model = { type: 'model', judges: [] };
    const single = await stack.api<{ fields?: Record<string, string> }>('POST', '/api/deliberations', {
      body: {
        question: 'What is 17 times 23?',
        councilModels: ['sim/a', 'sim/b'],
        expected: 391,
        grader: model,
      },
    });
    expect(single.status).toBe(400);
    expect(single.body.fields).toEqual({
      'grader.judges': expect.stringMatching(/^grader.judges must be a list of 1 to 5 model ids/),
    });
    const batch = await stack.api<{ fields?: Record<string, string> }>('POST', '/api/batches', {
      body: {
        defaults: { mode: 'council', councilModels: ['sim/a', 'sim/b'], grader: model },
        items: [{ question: 'What is 17 times 23?', expected: '391' }],
      },
    });
    expect(batch.status).toBe(400);
    expect(Object.keys(batch.body.fields ?? {})).toEqual(['items[0].grader.judges']);
  });

  it('an ungraded run stores no grade and tells its calls no expected answer', async () => {
    const { messageId, events } = await stack.run({
      question: 'What is 17 times 23?',
      councilModels: ['sim/a:acc100', 'sim/b:acc0'],
      chairmanModel: 'sim/chair',
    });
    expect(events.at(-1)?.type).toBe('complete');
    const rows: { content: string; grade: unknown }[] = await stack.db.query(
      `SELECT content, parsed_data->'grade' AS grade FROM deliberation_stages WHERE message_id = $1`,
      [messageId],
    );
    expect(rows.length).toBeGreaterThan(0);
    for (const row of rows) {
      expect(row.grade).toBeNull();
      expect(row.content).not.toMatch(/FINAL ANSWER/);
    }
    const view = (await stack.api<DeliberationView>('GET', `/api/deliberations/${messageId}`)).body;
    expect(view.status).toBe('complete');
    expect(view).not.toHaveProperty('grades');
  }, 120_000);
});
