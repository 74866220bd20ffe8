import { judgementRows, LONG_COLUMNS, longRows } from './long-rows';
import type { ReportAttemptRow, ReportCallRow, ReportItem, ReportStageRow } from './rows';

const row = (
  stageType: string,
  model: string | null,
  data: Record<string, unknown> | null,
  participant: number | null = null,
): ReportStageRow => ({ stageType, model, participant, data });

const pick = <T extends object>(rows: T[], keys: (keyof T)[]) =>
  rows.map((r) => Object.fromEntries(keys.map((k) => [k, r[k]])));

describe('long rows: judgements as the report reads them', () => {
  it('council: a ranking row per ranker, a place per ranked model (labels as shown), the best-ranked model', () => {
    const rows = [
      row('stage2_label_map', null, { 'Response A': 'sim/a', 'Response B': 'sim/b', 'Response C': 'sim/c' }),
      row('stage2', 'sim/a', { parsedRanking: ['Response B', 'Response A', 'Response B', 'Response C'] }, 0),
      row('stage2', 'sim/b', { parsedRanking: [] }, 1),
      row('stage2_aggregate', null, { aggregateRankings: [{ model: 'sim/b' }] }),
    ];
    const out = judgementRows('council', rows);
    expect(out.filter((r) => r.kind === 'contestant')).toEqual([
      { kind: 'contestant', model: 'sim/a', label: 'Response A', value: 1 },
      { kind: 'contestant', model: 'sim/b', label: 'Response B', value: 2 },
      { kind: 'contestant', model: 'sim/c', label: 'Response C', value: 3 },
    ]);
    const judged = out.filter((r) => r.kind !== 'contestant');
    expect(pick(judged, ['kind', 'participant', 'model', 'label', 'subject', 'value', 'parsed'])).toEqual([
      {
        kind: 'ranking',
        participant: 0,
        model: 'sim/a',
        label: undefined,
        subject: undefined,
        value: undefined,
        parsed: true,
      },
      {
        kind: 'rank',
        participant: 0,
        model: 'sim/a',
        label: 'Response B',
        subject: 'sim/b',
        value: 1,
        parsed: undefined,
      },
      {
        kind: 'rank',
        participant: 0,
        model: 'sim/a',
        label: 'Response A',
        subject: 'sim/a',
        value: 2,
        parsed: undefined,
      },
      // a model listed twice keeps its first place, as the report's mean ranks count it
      {
        kind: 'rank',
        participant: 0,
        model: 'sim/a',
        label: 'Response C',
        subject: 'sim/c',
        value: 3,
        parsed: undefined,
      },
      {
        kind: 'ranking',
        participant: 1,
        model: 'sim/b',
        label: undefined,
        subject: undefined,
        value: undefined,
        parsed: false,
      },
      {
        kind: 'outcome',
        participant: undefined,
        model: undefined,
        label: undefined,
        subject: 'sim/b',
        value: undefined,
        parsed: undefined,
      },
    ]);
  });

  it('debate: contestants with their labels, votes with label, model and position, revisions, the outcome', () => {
    const rows = [
      row('initial_answer', 'sim/b', null, 1),
      row('initial_answer', 'sim/a', null, 0),
      row('revised_label_map', null, { 'Response A': 'sim/b', 'Response B': 'sim/a' }),
      row('revision', 'sim/a', { decision: 'STAND', parseSuccess: true }, 0),
      row('revision', 'sim/b', { decision: null, parseSuccess: false }, 1),
      row('debate_vote', 'sim/b', { votedFor: null }, 1),
      row('debate_vote', 'sim/a', { votedFor: 'Response B' }, 0),
      row('debate_vote_tally', null, {
        tallies: { 'Response B': 1 },
        validVoteCount: 1,
        invalidVoteCount: 1,
      }),
      row('debate_winner', 'sim/a', {
        winnerModel: 'sim/a',
        winnerLabel: 'Response B',
        winnerDecision: 'STAND',
      }),
    ];
    const out = judgementRows('debate', rows);
    expect(out.map((r) => r.kind)).toEqual([
      'contestant',
      'contestant',
      'vote',
      'vote',
      'revision',
      'revision',
      'outcome',
    ]);
    expect(out.filter((r) => r.kind === 'contestant')).toEqual([
      { kind: 'contestant', model: 'sim/b', label: 'Response A', value: 1 },
      { kind: 'contestant', model: 'sim/a', label: 'Response B', value: 2 },
    ]);
    expect(
      pick(
        out.filter((r) => r.kind === 'vote'),
        ['participant', 'model', 'label', 'subject', 'value', 'parsed'],
      ),
    ).toEqual([
      { participant: 0, model: 'sim/a', label: 'Response B', subject: 'sim/a', value: 2, parsed: true },
      { participant: 1, model: 'sim/b', label: null, subject: null, value: null, parsed: false },
    ]);
    expect(
      pick(
        out.filter((r) => r.kind === 'revision'),
        ['participant', 'model', 'verdict', 'parsed'],
      ),
    ).toEqual([
      { participant: 0, model: 'sim/a', verdict: 'STAND', parsed: true },
      { participant: 1, model: 'sim/b', verdict: null, parsed: false },
    ]);
    expect(out.at(-1)).toMatchObject({
      kind: 'outcome',
      subject: 'sim/a',
      label: 'Response B',
      value: 1,
      tiebroken: false,
      method: null,
      verdict: 'STAND',
    });
  });

  it('jury: a score per juror and dimension, a verdict per juror (second seat named model#seat), the final verdict', () => {
    const rows = [
      row(
        'deliberation',
        'sim/j',
        { scores: { accuracy: 7, clarity: 5 }, verdict: 'APPROVE', parseSuccess: true },
        0,
      ),
      row('deliberation', 'sim/j', { scores: {}, verdict: null, parseSuccess: false }, 1),
      row('verdict', 'sim/f', { finalVerdict: 'APPROVE' }),
    ];
    const out = judgementRows('jury', rows);
    expect(pick(out, ['kind', 'participant', 'model', 'subject', 'value', 'verdict', 'parsed'])).toEqual([
      {
        kind: 'score',
        participant: 0,
        model: 'sim/j',
        subject: 'accuracy',
        value: 7,
        verdict: undefined,
        parsed: true,
      },
      {
        kind: 'score',
        participant: 0,
        model: 'sim/j',
        subject: 'clarity',
        value: 5,
        verdict: undefined,
        parsed: true,
      },
      {
        kind: 'verdict',
        participant: 0,
        model: 'sim/j',
        subject: undefined,
        value: undefined,
        verdict: 'APPROVE',
        parsed: true,
      },
      {
        kind: 'verdict',
        participant: 1,
        model: 'sim/j#1',
        subject: undefined,
        value: undefined,
        verdict: null,
        parsed: false,
      },
      {
        kind: 'outcome',
        participant: undefined,
        model: undefined,
        subject: undefined,
        value: undefined,
        verdict: 'APPROVE',
        parsed: undefined,
      },
    ]);
  });

  it('Delphi: estimates per round and panelist, round statistics, the outcome', () => {
    const estimate = (
      round: number,
      p: number,
      value: number,
      previous: number | null,
      carriedForward = false,
    ) =>
      row(
        `round_${round}`,
        `sim/p${p}`,
        { type: 'numeric', estimate: value, previousEstimate: previous, carriedForward },
        p,
      );
    const rows = [
      row('classify', 'sim/f', { type: 'numeric' }),
      estimate(1, 1, 200, null),
      estimate(1, 0, 100, null),
      row('round_1_stats', null, { median: 150, cv: 0.4, converged: false }),
      estimate(2, 0, 140, 100),
      estimate(2, 1, 200, 200, true),
      row('round_2_stats', null, { median: 170, mean: 170, cv: 0.1, converged: true }),
      // the mode's final value (issue 36: the outcome is what the mode reports, not the median)
      row('synthesis', 'sim/f', { finalValue: 171.5 }),
    ];
    const out = judgementRows('delphi', rows);
    expect(
      pick(out, [
        'kind',
        'round',
        'participant',
        'value',
        'previous',
        'carriedForward',
        'parsed',
        'converged',
        'cv',
      ]),
    ).toEqual([
      {
        kind: 'estimate',
        round: 1,
        participant: 0,
        value: 100,
        previous: null,
        carriedForward: false,
        parsed: true,
        converged: undefined,
        cv: undefined,
      },
      {
        kind: 'estimate',
        round: 1,
        participant: 1,
        value: 200,
        previous: null,
        carriedForward: false,
        parsed: true,
        converged: undefined,
        cv: undefined,
      },
      {
        kind: 'round',
        round: 1,
        participant: undefined,
        value: 150,
        previous: undefined,
        carriedForward: undefined,
        parsed: undefined,
        converged: false,
        cv: 0.4,
      },
      {
        kind: 'estimate',
        round: 2,
        participant: 0,
        value: 140,
        previous: 100,
        carriedForward: false,
        parsed: true,
        converged: undefined,
        cv: undefined,
      },
      // a carried-forward answer is no parse at all (the report skips it)
      {
        kind: 'estimate',
        round: 2,
        participant: 1,
        value: 200,
        previous: 200,
        carriedForward: true,
        parsed: null,
        converged: undefined,
        cv: undefined,
      },
      {
        kind: 'round',
        round: 2,
        participant: undefined,
        value: 170,
        previous: undefined,
        carriedForward: undefined,
        parsed: undefined,
        converged: true,
        cv: 0.1,
      },
      {
        kind: 'outcome',
        round: 2,
        participant: undefined,
        value: 171.5,
        previous: undefined,
        carriedForward: undefined,
        parsed: undefined,
        converged: true,
        cv: undefined,
      },
    ]);
    expect(out.at(-1)?.method).toBe('numeric');
  });

  it('no stage rows: no judgement rows', () => {
    expect(judgementRows('vote', [])).toEqual([]);
  });
});

describe('long rows of an item', () => {
  const item: ReportItem = {
    index: 4,
    messageId: 'm2',
    mode: 'vote',
    status: 'complete',
    reference: 'sim/a',
    key: 'k4',
  };
  const attempt = (n: number, latest: boolean, status: ReportAttemptRow['status']): ReportAttemptRow => ({
    index: 4,
    messageId: `m${n}`,
    attempt: n,
    latest,
    mode: 'vote',
    status,
    error: status === 'failed' ? 'boom' : null,
    dispatchedAt: '2026-01-01T00:00:00.000Z',
    completedAt: '2026-01-01T00:00:02.000Z',
    durationMs: 2000,
  });
  const call = (messageId: string, model: string, ok: boolean): ReportCallRow => ({
    messageId,
    stage: 'vote',
    callKey: model,
    model,
    ok,
    promptTokens: 3,
    completionTokens: ok ? 2 : null,
    costUsd: ok ? 0.5 : null,
    latencyMs: 10,
    finishedAt: '2026-01-01T00:00:01.000Z',
  });

  it('lists every attempt with its calls, then the latest attempt’s judgements, each row with index, key and reference', () => {
    const out = longRows({
      item,
      attempts: [attempt(1, false, 'failed'), attempt(2, true, 'complete')],
      calls: new Map([
        ['m1', [call('m1', 'sim/a', false)]],
        ['m2', [call('m2', 'sim/a', true), call('m2', 'sim/b', true)]],
      ]),
      rows: [row('initial_answer', 'sim/a', null, 0), row('vote_winner', 'sim/a', { winnerModel: 'sim/a' })],
    });
    expect(pick(out, ['kind', 'messageId', 'attempt', 'latest', 'status', 'model', 'ok', 'error'])).toEqual([
      {
        kind: 'item',
        messageId: 'm1',
        attempt: 1,
        latest: false,
        status: 'failed',
        model: null,
        ok: null,
        error: 'boom',
      },
      {
        kind: 'call',
        messageId: 'm1',
        attempt: 1,
        latest: false,
        status: 'failed',
        model: 'sim/a',
        ok: false,
        error: null,
      },
      {
        kind: 'item',
        messageId: 'm2',
        attempt: 2,
        latest: true,
        status: 'complete',
        model: null,
        ok: null,
        error: null,
      },
      {
        kind: 'call',
        messageId: 'm2',
        attempt: 2,
        latest: true,
        status: 'complete',
        model: 'sim/a',
        ok: true,
        error: null,
      },
      {
        kind: 'call',
        messageId: 'm2',
        attempt: 2,
        latest: true,
        status: 'complete',
        model: 'sim/b',
        ok: true,
        error: null,
      },
      {
        kind: 'contestant',
        messageId: 'm2',
        attempt: 2,
        latest: true,
        status: 'complete',
        model: 'sim/a',
        ok: null,
        error: null,
      },
      {
        kind: 'outcome',
        messageId: 'm2',
        attempt: 2,
        latest: true,
        status: 'complete',
        model: null,
        ok: null,
        error: null,
      },
    ]);
    for (const r of out) {
      expect(r).toMatchObject({ index: 4, key: 'k4', reference: 'sim/a', mode: 'vote' });
      expect(Object.keys(r).sort()).toEqual([...LONG_COLUMNS].sort());
    }
    expect(out[0]).toMatchObject({ startedAt: '2026-01-01T00:00:00.000Z', durationMs: 2000 });
    expect(out[3]).toMatchObject({ promptTokens: 3, completionTokens: 2, costUsd: 0.5, latencyMs: 10 });
    // Ungraded: no answer rows, no expected answer, no grade.
    for (const r of out) expect(r).toMatchObject({ expected: null, grade: null });
  });

  it('a graded item: every row has its expected answer, an answer row per graded answer, the outcome the final grade', () => {
    const grade = (verdict: string, extracted?: string) => ({
      grade: { verdict, grader: 'numeric', ...(extracted ? { extracted } : {}) },
    });
    const out = longRows({
      item: { ...item, expected: 391 },
      attempts: [attempt(2, true, 'complete')],
      calls: new Map(),
      rows: [
        row('initial_answer', 'sim/a', grade('correct', '391'), 0),
        row('initial_answer', 'sim/b', grade('incorrect', '390'), 1),
        row('initial_answer', 'sim/c', grade('unreadable'), 2),
        row('vote', 'sim/a', { votedFor: 'Response A' }, 0),
        row('vote_winner', 'sim/a', { winnerModel: 'sim/a', ...grade('correct', '391') }, 0),
      ],
    });
    for (const r of out) expect(r.expected).toBe(391);
    expect(out.find((r) => r.kind === 'outcome')?.grade).toBe('correct');
    expect(
      pick(
        out.filter((r) => r.kind === 'answer'),
        ['stage', 'participant', 'model', 'value', 'subject', 'grade'],
      ),
    ).toEqual([
      {
        stage: 'initial_answer',
        participant: 0,
        model: 'sim/a',
        value: '391',
        subject: null,
        grade: 'correct',
      },
      {
        stage: 'initial_answer',
        participant: 1,
        model: 'sim/b',
        value: '390',
        subject: null,
        grade: 'incorrect',
      },
      {
        stage: 'initial_answer',
        participant: 2,
        model: 'sim/c',
        value: null,
        subject: null,
        grade: 'unreadable',
      },
      {
        stage: 'vote_winner',
        participant: 0,
        model: 'sim/a',
        value: '391',
        subject: 'final',
        grade: 'correct',
      },
    ]);
    for (const r of out.filter((x) => x.kind !== 'answer' && x.kind !== 'outcome'))
      expect(r.grade).toBeNull();
  });
});
