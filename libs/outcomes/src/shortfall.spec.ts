import type { CallSummary, StoredStageCall } from '@conclave/contracts';
import { LINKS, viewOf } from './fixtures/views';
import { outcomeOf } from './outcome';
import { degradationOf, missingKindOf, partialOf, uncommittedStage } from './shortfall';
import { outcomeSummary } from './summary';
import { transcriptMarkdown } from './transcript';

const call = (stage: string, model: string, ok: boolean, error: string | null = null): CallSummary => ({
  stage,
  model,
  ok,
  error,
  finishReason: ok ? 'stop' : null,
  truncated: false,
  responseTimeMs: 10,
  promptTokens: null,
  completionTokens: null,
  costUsd: null,
});

const stored = (
  stage: string,
  key: string,
  model: string,
  content: string | null,
  error: string | null = null,
): StoredStageCall => ({
  stage,
  key,
  model,
  ok: content !== null,
  content,
  error,
  finishReason: content !== null ? 'stop' : null,
});

describe('missingKindOf', () => {
  it('tells a stop, a cut and a failure apart by the stored prefix', () => {
    expect(missingKindOf('cancelled: the deliberation was stopped')).toBe('cancelled');
    expect(missingKindOf('cut: quorum reached')).toBe('cut');
    expect(missingKindOf('cut: stage deadline passed')).toBe('cut');
    expect(missingKindOf('stopped: the deliberation ended')).toBe('cut');
    expect(missingKindOf('HTTP 502 from the provider')).toBe('failed');
    expect(missingKindOf(null)).toBe('failed');
  });
});

describe('uncommittedStage', () => {
  const calls = [call('stage1', 'a', true), call('stage1', 'b', true), call('stage2', 'a', true)];

  it('is the last call stage when none of its rows were stored', () => {
    expect(uncommittedStage('council', 'cancelled', ['stage1'], calls)).toBe('stage2');
    expect(uncommittedStage('council', 'failed', ['stage1'], calls)).toBe('stage2');
  });

  it('is null when that stage was committed, or the run did not end early', () => {
    expect(uncommittedStage('council', 'cancelled', ['stage1', 'stage2_label_map'], calls)).toBeNull();
    expect(uncommittedStage('council', 'complete', ['stage1'], calls)).toBeNull();
    expect(uncommittedStage('council', 'running', ['stage1'], calls)).toBeNull();
    expect(uncommittedStage('council', 'cancelled', [], [])).toBeNull();
  });

  it("knows each mode's stages, Delphi's numbered rounds among them", () => {
    expect(
      uncommittedStage(
        'delphi',
        'cancelled',
        ['classify', 'round_1', 'round_1_stats'],
        [call('round_1', 'a', true), call('round_2', 'a', true)],
      ),
    ).toBe('round_2');
    expect(
      uncommittedStage(
        'delphi',
        'cancelled',
        ['classify', 'round_1', 'round_1_stats'],
        [call('round_1', 'a', true)],
      ),
    ).toBeNull();
    expect(uncommittedStage('vote', 'failed', ['initial_answer'], [call('vote', 'a', true)])).toBe('vote');
    expect(uncommittedStage('jury', 'cancelled', ['present'], [call('deliberation', 'a', true)])).toBe(
      'deliberation',
    );
    expect(
      uncommittedStage(
        'debate',
        'cancelled',
        ['initial_answer', 'round1_label_map'],
        [call('revision', 'a', true)],
      ),
    ).toBe('revision');
  });
});

describe('partialOf', () => {
  it('keeps every answer that finished and names the calls that did not, with why', () => {
    const partial = partialOf({
      mode: 'council',
      status: 'cancelled',
      error: 'Cancelled by the user.',
      stage: 'stage1',
      calls: [
        stored('stage1', 'sim/athena', 'sim/athena', 'Athena says yes'),
        stored('stage1', 'sim/y', 'sim/y', null, 'cancelled: the deliberation was stopped'),
      ],
    });
    expect(partial).toEqual({
      reason: 'cancelled',
      why: 'Cancelled by the user.',
      stage: 'stage1',
      answers: [
        {
          stage: 'stage1',
          participant: 'sim/athena',
          model: 'sim/athena',
          content: 'Athena says yes',
          finishReason: 'stop',
        },
      ],
      cut: [
        {
          model: 'sim/y',
          role: 'council',
          stage: 'stage1',
          kind: 'cancelled',
          why: 'cancelled: the deliberation was stopped',
        },
      ],
    });
  });

  it("leaves out the model grader's judge calls (billed, but no contribution to the stage)", () => {
    const partial = partialOf({
      mode: 'council',
      status: 'cancelled',
      error: 'Cancelled by the user.',
      stage: 'stage3',
      calls: [
        stored('stage3', 'chairman', 'sim/chair', 'FINAL ANSWER: 42'),
        stored('stage3', 'grade:0:abc', 'sim/j1', 'VERDICT: CORRECT\nREASON: yes'),
        stored('stage3', 'grade:1:abc', 'sim/j2', null, 'cancelled: the deliberation was stopped'),
      ],
    });
    expect(partial?.answers.map((a) => a.model)).toEqual(['sim/chair']);
    expect(partial?.cut).toEqual([]);
  });

  it("numbers Delphi's panelists as the run's events do", () => {
    const partial = partialOf({
      mode: 'delphi',
      status: 'failed',
      error: 'The deliberation reached its time limit.',
      stage: 'round_2',
      calls: [
        stored('round_2', 'p1', 'sim/b', 'ESTIMATE: 4'),
        stored('round_2', 'p0', 'sim/a', null, 'stopped: the deliberation ended'),
      ],
    });
    expect(partial?.answers.map((a) => [a.participant, a.model])).toEqual([[2, 'sim/b']]);
    expect(partial?.cut).toEqual([
      {
        model: 'sim/a',
        role: 'panelist',
        stage: 'round_2',
        kind: 'cut',
        why: 'stopped: the deliberation ended',
      },
    ]);
  });

  it('is null unless the run was cancelled or failed before finishing a stage (between stages: nothing to keep)', () => {
    expect(partialOf({ mode: 'vote', status: 'complete', error: null, stage: null, calls: [] })).toBeNull();
    expect(partialOf({ mode: 'vote', status: 'cancelled', error: 'x', stage: null, calls: [] })).toBeNull();
    expect(partialOf({ mode: 'vote', status: 'cancelled', error: 'x', stage: 'answer', calls: [] })).toEqual({
      reason: 'cancelled',
      why: 'x',
      stage: 'answer',
      answers: [],
      cut: [],
    });
  });
});

describe('degradationOf', () => {
  it('says how many of the panel answered and names who did not, and why', () => {
    const degraded = degradationOf({
      mode: 'council',
      result: {},
      calls: [
        call('stage1', 'sim/athena', true),
        call('stage1', 'sim/x:fail', false, 'HTTP 400 from the simulated provider: simulated failure'),
        call('stage1', 'sim/y', true),
      ],
    });
    expect(degraded?.asked).toBe(3);
    expect(degraded?.answered).toBe(2);
    expect(degraded?.summary).toBe(
      '2 of 3 answered — sim/x:fail: HTTP 400 from the simulated provider: simulated failure',
    );
    expect(degraded?.missing).toEqual([
      {
        model: 'sim/x:fail',
        role: 'council',
        stage: 'stage1',
        kind: 'failed',
        why: 'HTTP 400 from the simulated provider: simulated failure',
      },
    ]);
  });

  it('is null when everyone answered readably', () => {
    expect(degradationOf(viewOf('council-complete'))).toBeNull();
    expect(degradationOf(viewOf('vote-complete'))).toBeNull();
  });

  it('names later-stage failures with their role and stage; a fallback that answered does not hide the one that failed', () => {
    const degraded = degradationOf({
      mode: 'council',
      result: {},
      calls: [
        call('stage1', 'a', true),
        call('stage1', 'b', true),
        call('stage2', 'a', true),
        call('stage2', 'b', false, 'cut: quorum reached'),
        call('stage3', 'c', false, 'timed out after 60 s'),
        call('stage3', 'd', true),
      ],
    });
    expect(degraded?.summary).toBe(
      '2 of 2 answered, 1 later answer missing, a chairman failed, a fallback answered — ' +
        'b (council, stage2): cut: quorum reached; c (chairman, stage3): timed out after 60 s',
    );
    expect(degraded?.missing.map((m) => m.kind)).toEqual(['cut', 'failed']);
  });

  it('says in its headline that the chairman failed when every panelist answered', () => {
    const degraded = degradationOf({
      mode: 'council',
      result: {},
      calls: [
        call('stage1', 'a', true),
        call('stage1', 'b', true),
        call('stage2', 'a', true),
        call('stage2', 'b', true),
        call('stage3', 'c', false, 'upstream error'),
      ],
    });
    expect(degraded?.summary).toBe(
      '2 of 2 answered, the chairman failed — c (chairman, stage3): upstream error',
    );
  });

  it('names a member that failed the same way in several stages once', () => {
    const degraded = degradationOf({
      mode: 'council',
      result: {},
      calls: [
        call('stage1', 'sim/athena', true),
        call('stage1', 'sim/x:fail', false, 'upstream error'),
        call('stage1', 'sim/y', true),
        call('stage2', 'sim/x:fail', false, 'upstream error'),
      ],
    });
    expect(degraded?.summary).toBe('2 of 3 answered — sim/x:fail: upstream error (also in stage2)');
    expect(degraded?.missing).toHaveLength(2);
  });

  it("keeps a running Delphi exercise's panelists unnamed, and names them once it is over", () => {
    const calls = [
      call('classify', 'sim/fac', true),
      call('round_1', 'sim/p1', true),
      call('round_1', 'sim/x:fail', false, 'HTTP 400 from sim/x:fail'),
      call('round_1', 'sim/p3', true),
    ];
    const running = degradationOf({ mode: 'delphi', result: {}, calls, status: 'running' });
    expect(running?.summary).toBe('2 of 3 answered — a panelist: its call failed');
    expect(JSON.stringify(running)).not.toContain('sim/x');
    const over = degradationOf({ mode: 'delphi', result: {}, calls, status: 'complete' });
    expect(over?.summary).toBe('2 of 3 answered — sim/x:fail: HTTP 400 from sim/x:fail');
  });

  it('counts answers its mode could not read', () => {
    const view = viewOf('council-complete');
    const result = view.result as { stage2: { model: string; parsedRanking: string[] }[] };
    result.stage2[0].parsedRanking = [];
    const degraded = degradationOf(view);
    expect(degraded?.missing).toEqual([
      {
        model: result.stage2[0].model,
        role: 'council',
        stage: 'stage2',
        kind: 'unreadable',
        why: 'its ranking could not be read',
      },
    ]);
    expect(degraded?.summary).toMatch(/ \(council, stage2\): its ranking could not be read$/);
  });

  it.each([
    'council-failed-panelist',
    'vote-failed-panelist',
    'jury-failed-panelist',
    'debate-failed-panelist',
    'delphi-failed-panelist',
  ])(
    '%s: the failed member is named in the outcome, the summary text and the transcript, near the top',
    (name) => {
      const view = viewOf(name);
      const outcome = outcomeOf(view, LINKS);
      const failed = view.calls.find((c) => !c.ok);
      expect(failed).toBeDefined();
      expect(outcome.degraded?.summary).toContain(failed?.model);
      expect(outcome.partial).toBe(true);
      expect(outcomeSummary(outcome).split('\n')[0]).toBe(`Degraded: ${outcome.degraded?.summary}`);
      const transcript = transcriptMarkdown(view).split('\n');
      const line = transcript.findIndex((l) => l.startsWith('- Degraded: '));
      expect(line).toBeGreaterThan(0);
      expect(line).toBeLessThan(8);
    },
  );
});

describe('a kept stage in the outputs', () => {
  const view = () => {
    const v = viewOf('council-cancelled');
    v.partial = {
      reason: 'cancelled',
      why: 'Cancelled by the user.',
      stage: 'stage3',
      answers: [],
      cut: [
        {
          model: 'sim/c',
          role: 'chairman',
          stage: 'stage3',
          kind: 'cancelled',
          why: 'cancelled: the deliberation was stopped',
        },
      ],
    };
    return v;
  };

  it('lists the kept answers after why there is no final text, never as one', () => {
    const v = view();
    v.partial?.answers.push({
      stage: 'stage3',
      participant: 'sim/c',
      model: 'sim/c',
      content: 'Half a synthesis',
      finishReason: 'stop',
    });
    const outcome = outcomeOf(v, LINKS);
    expect(outcome.finalText).toBeNull();
    expect(outcome.partialStage?.answers).toHaveLength(1);
    const text = outcomeSummary(outcome);
    expect(text).toMatch(/No final answer: the council deliberation was cancelled/);
    expect(text).toMatch(
      /Kept of its unfinished stage stage3 \(1 finished answer; none of them is a final answer\):\n\n--- sim\/c \(stage3\) ---\nHalf a synthesis/,
    );
    const md = transcriptMarkdown(v);
    expect(md).toContain('## Kept from the unfinished stage `stage3`');
    expect(md).toContain('Half a synthesis');
    expect(md.indexOf('## Kept from')).toBeLessThan(md.indexOf('## Final answer'));
  });

  it('says what was cut when nothing of the stage finished', () => {
    const md = transcriptMarkdown(view());
    expect(md).toContain('No call of this stage had finished.');
    expect(md).toMatch(/\| sim\/c \| chairman \| cancelled: cancelled: the deliberation was stopped \|/);
  });
});
