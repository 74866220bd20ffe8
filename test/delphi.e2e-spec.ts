import type {
  DelphiClassification,
  DelphiEstimateSummary,
  DelphiReport,
  DelphiResult,
  DeliberationView,
  DeliveredEvent,
  NumericStats,
  QualitativeStats,
} from '@conclave/contracts';
import { expectContiguous, modeEvents, TestStack } from './support/harness';

type RoundComplete = DeliveredEvent & {
  round: number;
  data: { estimates: DelphiEstimateSummary[]; stats: NumericStats & QualitativeStats; converged: boolean };
};

const NUMERIC_Q = 'How many software engineers will be employed globally by 2030?';
const QUALITATIVE_Q = 'Should our company adopt a monorepo or polyrepo strategy?';
const PANEL = ['sim/p1', 'sim/p2', 'sim/p3', 'sim/p4'];

describe('delphi mode end to end', () => {
  const stack = new TestStack();
  beforeAll(() => stack.start(), 60_000);
  afterAll(() => stack.stop());

  const delphi = (question: string, modeConfig: Record<string, unknown> = {}) =>
    stack.run({
      question,
      mode: 'delphi',
      modeConfig: { panelistModels: PANEL, facilitatorModel: 'sim/f', ...modeConfig },
    });
  const rounds = (events: DeliveredEvent[]) =>
    events.filter((e) => e.type === 'round_complete') as RoundComplete[];
  const find = <T>(events: DeliveredEvent[], type: string) =>
    events.find((e) => e.type === type) as (DeliveredEvent & T) | undefined;
  const view = async (messageId: string) =>
    (await stack.api<DeliberationView<DelphiResult>>('GET', `/api/deliberations/${messageId}`)).body;

  it('runs a numeric Delphi to convergence with the events and rows of 05-delphi.md', async () => {
    const { messageId, conversationId, events } = await delphi(NUMERIC_Q);
    expectContiguous(events);
    const types = modeEvents(events).map((e) => e.type);
    expect(types.slice(0, 2)).toEqual(['delphi_start', 'classify_complete']);
    expect(types.slice(-5)).toEqual([
      'convergence_reached',
      'synthesis_start',
      'synthesis_complete',
      'title_complete',
      'complete',
    ]);
    expect(find(events, 'delphi_start')).toMatchObject({ conversationId, messageId, questionType: null });
    expect(find<{ data: DelphiClassification }>(events, 'classify_complete')?.data).toMatchObject({
      type: 'numeric',
      options: null,
    });

    const done = rounds(events);
    expect(done.length).toBeGreaterThanOrEqual(2);
    expect(done.length).toBeLessThanOrEqual(3);
    done.forEach((round, i) => {
      expect(round.round).toBe(i + 1);
      expect(round.data.estimates.map((e) => e.participantIndex)).toEqual([1, 2, 3, 4]);
      for (const estimate of round.data.estimates)
        expect(Object.keys(estimate).sort()).toEqual([
          'changed',
          'confidence',
          'estimate',
          'participantIndex',
        ]);
    });
    expect(done[0].data.estimates.every((e) => e.changed === false)).toBe(true);
    expect(done[1].data.estimates.some((e) => e.changed)).toBe(true);
    expect(done.at(-1)?.data.converged).toBe(true);
    expect(done.at(-1)!.data.stats.cv).toBeLessThan(0.15);
    // participants stay anonymous on the wire during the run
    for (const round of done) expect(JSON.stringify(round)).not.toMatch(/sim\/p\d/);
    const progress = events.filter(
      (e) => e.type === 'model_progress' && String(e.stage).startsWith('round_'),
    );
    expect(new Set(progress.map((e) => e.participant))).toEqual(new Set([1, 2, 3, 4]));

    const report = find<{ data: DelphiReport }>(events, 'synthesis_complete')!.data;
    const last = done.at(-1)!.data.stats;
    expect(report).toMatchObject({
      facilitatorModel: 'sim/f',
      totalRounds: done.length,
      converged: true,
      finalValue: last.mean,
      median: last.median,
    });
    expect(report.confidenceInterval!.low).toBeLessThan(last.mean);
    expect(report.confidenceInterval!.high).toBeGreaterThan(last.mean);

    const rows = await stack.stageRows(messageId);
    const expected: [string, number, string | null][] = [['classify', 0, 'facilitator']];
    for (let r = 1; r <= done.length; r++) {
      expected.push(...PANEL.map((): [string, number, string] => [`round_${r}`, 2 * r - 1, 'panelist']), [
        `round_${r}_stats`,
        2 * r,
        'stats',
      ]);
    }
    expected.push(['synthesis', 99, 'facilitator']);
    expect(rows.map((r) => [r.stage_type, r.stage_order, r.role])).toEqual(expected);
    expect(Object.keys(rows[1].parsed_data ?? {}).sort()).toEqual([
      'changed',
      'confidence',
      'estimate',
      'previousEstimate',
      'reasoning',
      'round',
      'type',
    ]);
    expect(rows.find((r) => r.stage_type === 'round_1_stats')?.content).toMatch(/^Round 1 Statistics: Mean=/);
    expect(rows.at(-1)?.parsed_data).toEqual({
      totalRounds: done.length,
      converged: true,
      convergenceRound: done.length,
      finalValue: last.mean,
    });

    const result = (await view(messageId)).result;
    expect(result.classification).toEqual(
      find<{ data: DelphiClassification }>(events, 'classify_complete')!.data,
    );
    expect(result.rounds?.map((r) => r.stats)).toEqual(done.map((r) => r.data.stats));
    expect(result.rounds?.[0].estimates.map((e) => e.model)).toEqual(PANEL);
    expect(result).toMatchObject({
      converged: true,
      convergenceRound: done.length,
      finalValue: last.mean,
      report,
    });
  });

  it('runs a qualitative Delphi: options from the classification, answers matched, agreement', async () => {
    const { messageId, events } = await delphi(QUALITATIVE_Q);
    const classification = find<{ data: DelphiClassification }>(events, 'classify_complete')!.data;
    expect(classification).toMatchObject({
      type: 'qualitative',
      options: ['Monorepo', 'Polyrepo', 'Hybrid of monorepo and polyrepo', 'Neither'],
    });
    const done = rounds(events);
    for (const round of done) {
      for (const e of round.data.estimates) expect(classification.options).toContain(e.answer);
    }
    expect(done.at(-1)!.data.stats.agreementPercentage).toBeGreaterThanOrEqual(75);
    const report = find<{ data: DelphiReport }>(events, 'synthesis_complete')!.data;
    expect(report.finalValue).toBe(done.at(-1)!.data.stats.mode);
    expect(report.median).toBeUndefined();
    expect((await view(messageId)).result.finalValue).toBe(report.finalValue);
  });

  it('uses the request options with a qualitative override, without a classification call', async () => {
    const options = ['Monorepo', 'Polyrepo', 'Hybrid (monorepo for core, polyrepo for services)'];
    const { messageId, events } = await delphi(QUALITATIVE_Q, {
      questionType: 'qualitative',
      options,
      panelistModels: ['sim/a:byname', 'sim/b', 'sim/c', 'sim/d'],
    });
    expect(find(events, 'delphi_start')).toMatchObject({ questionType: 'qualitative' });
    expect(find<{ data: DelphiClassification }>(events, 'classify_complete')?.data).toMatchObject({
      type: 'qualitative',
      options,
    });
    const calls = await stack.db.query(
      `SELECT COUNT(*)::int AS n FROM model_calls WHERE message_id = $1 AND stage = 'classify'`,
      [messageId],
    );
    expect(calls[0].n).toBe(0);
    for (const e of rounds(events)[0].data.estimates) expect(options).toContain(e.answer);
  });

  describe('edge cases of 05-delphi.md §F', () => {
    it('identical answers in round 1 converge at once', async () => {
      const { events } = await delphi(NUMERIC_Q, {
        panelistModels: ['sim/a:fixed', 'sim/b:fixed', 'sim/c:fixed'],
      });
      expect(rounds(events)).toHaveLength(1);
      expect(rounds(events)[0].data.stats).toMatchObject({ stdDev: 0, cv: 0 });
      expect(find(events, 'convergence_reached')).toMatchObject({ round: 1 });
      const qualitative = await delphi(QUALITATIVE_Q, {
        panelistModels: ['sim/a:fixed', 'sim/b:fixed', 'sim/c:fixed'],
      });
      expect(rounds(qualitative.events)[0].data.stats.agreementPercentage).toBe(100);
      expect(rounds(qualitative.events)).toHaveLength(1);
    });

    it('a stubborn panelist keeps it from converging: max rounds reached, noted in the report', async () => {
      const { events } = await delphi(NUMERIC_Q, {
        panelistModels: ['sim/a', 'sim/b', 'sim/c', 'sim/d:stubborn'],
        maxRounds: 3,
      });
      expect(rounds(events)).toHaveLength(3);
      expect(find(events, 'convergence_reached')).toBeUndefined();
      expect(find(events, 'max_rounds_reached')).toMatchObject({ round: 3 });
      const report = find<{ data: DelphiReport }>(events, 'synthesis_complete')!.data;
      expect(report.converged).toBe(false);
      expect(report.report).toMatch(/did not converge/);
    });

    it('a non-numeric answer is excluded from that round; fewer than 3 valid estimates is an error', async () => {
      const { events } = await delphi(NUMERIC_Q, {
        panelistModels: ['sim/a', 'sim/b', 'sim/c', 'sim/d:nonnumeric'],
      });
      expect(rounds(events)[0].data.estimates.map((e) => e.participantIndex)).toEqual([1, 2, 3]);
      expect(events.at(-1)?.type).toBe('complete');
      const tooFew = await delphi(NUMERIC_Q, {
        panelistModels: ['sim/a', 'sim/b:nonnumeric', 'sim/c:nonnumeric'],
      });
      expect(tooFew.events.at(-1)).toMatchObject({
        type: 'error',
        message: 'Only 1 valid estimate in round 1; a Delphi round needs at least 3.',
      });
    });

    it('an answer without an ESTIMATE line is read from any number; without a confidence it is MEDIUM', async () => {
      const { messageId, events } = await delphi(NUMERIC_Q, {
        panelistModels: ['sim/a:noline', 'sim/b:noconfidence', 'sim/c:scale'],
        maxRounds: 2,
      });
      const first = rounds(events)[0].data.estimates;
      expect(first).toHaveLength(3);
      expect(first[1].confidence).toBe('MEDIUM');
      const rows = await stack.stageRows(messageId);
      const scaled = rows.find((r) => r.stage_type === 'round_1' && r.model === 'sim/c:scale')!;
      expect(scaled.content).toMatch(/ESTIMATE: [\d.]+ million/);
      expect((scaled.parsed_data as { estimate: number }).estimate).toBeGreaterThan(1000);
    });

    it('a panelist failing in a later round carries its answer forward unchanged', async () => {
      const { messageId, events } = await delphi(NUMERIC_Q, {
        panelistModels: ['sim/a', 'sim/b', 'sim/c', 'sim/d:fail@reestimate:stubborn'],
        maxRounds: 2,
      });
      const [first, second] = rounds(events);
      const before = first.data.estimates.find((e) => e.participantIndex === 4)!;
      const after = second.data.estimates.find((e) => e.participantIndex === 4)!;
      expect(after).toEqual({ ...before, changed: false });
      const row = (await stack.stageRows(messageId)).find(
        (r) => r.stage_type === 'round_2' && r.model?.startsWith('sim/d'),
      );
      expect(row?.parsed_data).toMatchObject({
        changed: false,
        previousEstimate: before.estimate,
        estimate: before.estimate,
      });
    });

    it('a panelist failing in round 1 is excluded from every later round', async () => {
      const { events } = await delphi(NUMERIC_Q, {
        panelistModels: ['sim/a', 'sim/b', 'sim/c', 'sim/d:fail@estimate:stubborn'],
        maxRounds: 2,
      });
      for (const round of rounds(events))
        expect(round.data.estimates.map((e) => e.participantIndex)).toEqual([1, 2, 3]);
      const later = events.filter(
        (e) => e.type === 'model_progress' && e.stage === 'round_2' && e.participant === 4,
      );
      expect(later).toEqual([]);
    });

    it('all panelists fail in round 1: error, no stage rows', async () => {
      const { messageId, events } = await delphi(NUMERIC_Q, {
        panelistModels: ['sim/a:fail', 'sim/b:fail', 'sim/c:fail'],
      });
      expect(events.at(-1)).toMatchObject({ type: 'error', message: 'All panelists failed in round 1.' });
      expect(await stack.stageRows(messageId)).toEqual([]);
    });

    it('flags a very wide range (CV > 2.0) as high variance', async () => {
      const { events } = await delphi(NUMERIC_Q, {
        panelistModels: [
          'sim/a:value1',
          'sim/b:value1',
          'sim/c:value1',
          'sim/d:value1',
          'sim/e:value1',
          'sim/g:value1000',
        ],
        maxRounds: 2,
      });
      expect(rounds(events)[0].data.stats).toMatchObject({ highVariance: true });
    });

    it('a mean of 0 leaves the CV undefined: null with a flag, never Infinity or NaN', async () => {
      const { messageId, events } = await delphi(NUMERIC_Q, {
        panelistModels: ['sim/a:value-5', 'sim/b:value5', 'sim/c:value0'],
        maxRounds: 2,
      });
      const stats = rounds(events)[0].data.stats;
      expect(stats).toMatchObject({ mean: 0, cv: null, cvUndefined: true });
      const [row] = await stack.db.query(
        `SELECT parsed_data->>'cv' AS cv, parsed_data->>'cvUndefined' AS flag FROM deliberation_stages WHERE message_id = $1 AND stage_type = 'round_1_stats'`,
        [messageId],
      );
      expect(row).toEqual({ cv: null, flag: 'true' });
      expect(events.at(-1)?.type).toBe('complete');
    });

    it('a failed classification falls back to qualitative', async () => {
      const { events } = await delphi(NUMERIC_Q, { facilitatorModel: 'sim/f:malformed@classify' });
      expect(find<{ data: DelphiClassification }>(events, 'classify_complete')?.data).toMatchObject({
        type: 'qualitative',
        reasoning: expect.stringMatching(/falling back to qualitative/),
      });
      expect(events.at(-1)?.type).toBe('complete');
    });

    it('a numeric override ignores options and skips classification', async () => {
      const { messageId, events } = await delphi('Pick one', {
        questionType: 'numeric',
        options: ['a', 'b'],
      });
      expect(find<{ data: DelphiClassification }>(events, 'classify_complete')?.data).toEqual({
        type: 'numeric',
        options: null,
        reasoning: 'Question type set by the request.',
      });
      const calls = await stack.db.query(
        `SELECT COUNT(*)::int AS n FROM model_calls WHERE message_id = $1 AND stage = 'classify'`,
        [messageId],
      );
      expect(calls[0].n).toBe(0);
    });

    it('a qualitative override without options asks the facilitator for options', async () => {
      const { events } = await delphi(QUALITATIVE_Q, {
        questionType: 'qualitative',
        facilitatorModel: 'sim/f:numeric',
      });
      const classification = find<{ data: DelphiClassification }>(events, 'classify_complete')!.data;
      expect(classification.type).toBe('qualitative');
      expect(events.at(-1)?.type).toBe('complete');
    });

    it('the facilitator failing the synthesis is an error, rounds kept', async () => {
      const { messageId, events } = await delphi(NUMERIC_Q, { facilitatorModel: 'sim/f:fail@report' });
      expect(events.at(-1)).toMatchObject({
        type: 'error',
        message: expect.stringMatching(/facilitator model sim\/f:fail@report failed/),
      });
      const types = (await stack.stageRows(messageId)).map((r) => r.stage_type);
      expect(types).toContain('round_1_stats');
      expect(types).not.toContain('synthesis');
    });

    it('a panelist timing out in a round is a failure for that round (the minimum timeout is 30 s)', async () => {
      const { messageId } = await stack.deliberate({
        question: NUMERIC_Q,
        mode: 'delphi',
        modeConfig: {
          panelistModels: ['sim/a', 'sim/b', 'sim/c', 'sim/d:timeout@reestimate:stubborn'],
          facilitatorModel: 'sim/f',
          maxRounds: 2,
          timeoutMs: 30_000,
        },
      });
      const events = await stack.follow(messageId, { timeoutMs: 55_000 });
      const [first, second] = rounds(events);
      expect(second.data.estimates.find((e) => e.participantIndex === 4)).toEqual({
        ...first.data.estimates.find((e) => e.participantIndex === 4),
        changed: false,
      });
      const failed = events.find(
        (e) => e.type === 'model_progress' && e.stage === 'round_2' && e.state === 'failed',
      );
      expect(failed).toMatchObject({ participant: 4, error: 'timed out' });
    }, 60_000);
  });

  describe('request validation (05-delphi.md §D)', () => {
    const post = (modeConfig: Record<string, unknown>) =>
      stack.api<{ fields?: Record<string, string> }>('POST', '/api/deliberations', {
        body: { question: 'q', mode: 'delphi', modeConfig },
      });

    it.each([
      ['two panelists', { panelistModels: ['sim/a', 'sim/b'] }, 'modeConfig.panelistModels'],
      [
        'eight panelists',
        { panelistModels: ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'].map((m) => `sim/${m}`) },
        'modeConfig.panelistModels',
      ],
      [
        'a facilitator who is a panelist',
        { panelistModels: ['sim/a', 'sim/b', 'sim/c'], facilitatorModel: 'sim/b' },
        'modeConfig.facilitatorModel',
      ],
      ['one round', { maxRounds: 1 }, 'modeConfig.maxRounds'],
      ['six rounds', { maxRounds: 6 }, 'modeConfig.maxRounds'],
      ['a CV threshold of 0', { numericConvergenceThreshold: 0 }, 'modeConfig.numericConvergenceThreshold'],
      [
        'an agreement threshold of 40',
        { qualitativeConvergenceThreshold: 40 },
        'modeConfig.qualitativeConvergenceThreshold',
      ],
      ['an unknown question type', { questionType: 'ordinal' }, 'modeConfig.questionType'],
      ['one option', { options: ['only'] }, 'modeConfig.options'],
      ['an empty option', { options: ['a', ''] }, 'modeConfig.options'],
      ['a timeout of 10 s', { timeoutMs: 10_000 }, 'modeConfig.timeoutMs'],
    ])('%s is a 400 naming %s', async (_name, modeConfig, field) => {
      const response = await post(modeConfig);
      expect(response.status).toBe(400);
      expect(Object.keys(response.body.fields ?? {})).toEqual([field]);
    });

    it('says why a facilitator may not be a panelist', async () => {
      const response = await post({ panelistModels: ['sim/a', 'sim/b', 'sim/c'], facilitatorModel: 'sim/a' });
      expect(response.body.fields?.['modeConfig.facilitatorModel']).toMatch(
        /does NOT participate as a panelist/,
      );
    });
  });
});
