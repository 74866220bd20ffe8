import { SimulatedProvider, type ModelProvider } from '@conclave/llm';
import { SIMULATED_FALLBACK, SIMULATED_RESPONDERS, modeDefinition } from '../modes';
import { MemoryStore } from '../testing/memory-store';
import {
  chainState,
  cutDecision,
  deadlineReason,
  hasAnswer,
  memberGate,
  quorumReason,
  stageQuorum,
  withFallbacks,
} from './quorum';
import { StageRunner } from './stage-runner';
import type { CallOutcome, ModeDefaults, PlannedCall, SuccessfulCall } from './types';
import { simulatedReply } from '../../../../test/support/replies';

const DEFAULTS: ModeDefaults = {
  timeoutMs: 10_000,
  council: { councilModels: ['sim/a', 'sim/b'], chairmanModel: 'sim/chair' },
  jury: { jurorModels: ['sim/a', 'sim/b', 'sim/c'], foremanModel: 'sim/f' },
  debate: { models: ['sim/a', 'sim/b', 'sim/c'] },
  delphi: { panelistModels: ['sim/a', 'sim/b', 'sim/c'], facilitatorModel: 'sim/f' },
  vote: { models: ['sim/a', 'sim/b', 'sim/c'] },
};

const ok = (key: string, model = key): CallOutcome => simulatedReply(key, 'answer', { model });
const failed = (key: string, error = 'HTTP 400 from the simulated provider', model = key): CallOutcome => ({
  ok: false,
  key,
  model,
  error,
  responseTimeMs: 1,
});

describe('stage quorum', () => {
  it('is a count of members capped below all of them, or a fraction rounded up, never under the minimum', () => {
    expect(stageQuorum(undefined, 4, 2)).toBeNull();
    expect(stageQuorum(3, 4, 2)).toBe(3);
    expect(stageQuorum(4, 4, 2)).toBeNull(); // every member: today's behaviour
    expect(stageQuorum(5, 3, 2)).toBeNull(); // a later stage with fewer members waits for all
    expect(stageQuorum(0.5, 4, 2)).toBe(2);
    expect(stageQuorum(0.6, 4, 2)).toBe(3);
    expect(stageQuorum(0.2, 4, 2)).toBe(2); // the mode's minimum
    expect(memberGate({}, 4, 2, hasAnswer)).toBeNull();
    expect(memberGate({ stageDeadlineMs: 5000 }, 4, 2, hasAnswer)).toEqual({
      quorum: null,
      deadlineMs: 5000,
      minimum: 2,
      counts: hasAnswer,
    });
  });

  it('cuts once k answered, or at the deadline once the minimum answered, and keeps a stored decision', () => {
    const gate = { quorum: 3, deadlineMs: 20_000, minimum: 2, counts: hasAnswer };
    const answers = (n: number) => Array.from({ length: n }, (_, i) => ok(`sim/${i}`));
    const at = (answered: number, pending: number, deadlinePassed = false, storedCut: string | null = null) =>
      cutDecision(gate, { settled: answers(answered), pending, deadlinePassed, storedCut });
    expect(at(2, 2)).toBeNull();
    expect(at(3, 1)).toBe(quorumReason(3));
    expect(at(3, 1)).toBe('cut: quorum of 3 reached');
    expect(at(3, 0)).toBeNull(); // nothing left to cut
    expect(at(1, 3, true)).toBeNull(); // below the minimum: waits on
    expect(at(2, 2, true)).toBe(deadlineReason(20_000));
    expect(at(2, 2, true)).toBe('cut: stage deadline of 20000 ms passed');
    expect(at(0, 2, false, 'cut: quorum of 3 reached')).toBe('cut: quorum of 3 reached');
    expect(
      cutDecision(
        { quorum: null, deadlineMs: null, minimum: 2, counts: hasAnswer },
        { settled: answers(5), pending: 1, deadlinePassed: true },
      ),
    ).toBeNull();
  });

  it('counts only the answers the mode can read, toward the quorum and toward the minimum', () => {
    const readable = (o: { content: string }) => /\d/.test(o.content);
    const gate = { quorum: 3, deadlineMs: 20_000, minimum: 2, counts: readable };
    const withText = (key: string, content: string): SuccessfulCall => ({
      ...(ok(key) as SuccessfulCall),
      content,
    });
    const settled = [withText('a', '42'), withText('b', 'no idea'), withText('c', '7'), failed('d')];
    // Three ok answers, but one is unreadable: two count, the quorum of three is not reached.
    expect(cutDecision(gate, { settled, pending: 2, deadlinePassed: false })).toBeNull();
    expect(
      cutDecision(gate, { settled: [...settled, withText('e', '5')], pending: 1, deadlinePassed: false }),
    ).toBe(quorumReason(3));
    // At the deadline the minimum counts readable answers too.
    const oneReadable = [withText('a', '42'), withText('b', 'no idea')];
    expect(cutDecision(gate, { settled: oneReadable, pending: 3, deadlinePassed: true })).toBeNull();
    expect(hasAnswer(withText('x', '  \n'))).toBe(false);
  });
});

describe('a seat with fallbacks', () => {
  const chair = withFallbacks(
    {
      key: 'sim/c',
      participant: 'sim/c',
      model: 'sim/c',
      messages: [{ role: 'user', content: 'synthesize' }],
    },
    ['sim/d', 'sim/e'],
  );
  const chain: PlannedCall[] = [chair, ...(chair.fallbacks ?? [])];
  const stateWith = (outcomes: CallOutcome[], accepts = () => true) => {
    const byKey = new Map(outcomes.map((o) => [o.key, o]));
    return chainState(chain, (key) => byKey.get(key), accepts);
  };

  it('asks each model in turn until one answers, the same from the same stored outcomes', () => {
    expect(chain.map((c) => [c.model, c.participant])).toEqual([
      ['sim/c', 'sim/c'],
      ['sim/d', 'sim/d'],
      ['sim/e', 'sim/e'],
    ]);
    expect(new Set(chain.map((c) => c.key)).size).toBe(3);
    expect(stateWith([])).toMatchObject({ kind: 'next', index: 0 });
    expect(stateWith([failed(chain[0].key)])).toMatchObject({ kind: 'next', index: 1 });
    const answered = stateWith([failed(chain[0].key), ok(chain[1].key, 'sim/d')]);
    expect(answered).toMatchObject({ kind: 'done', outcome: { model: 'sim/d', ok: true } });
    expect(answered.attempts).toHaveLength(2);
    const allFailed = stateWith(chain.map((c) => failed(c.key, 'x', c.model)));
    expect(allFailed).toMatchObject({ kind: 'done', outcome: { model: 'sim/e', ok: false } });
  });

  it('passes an unreadable answer on, and stops at a call stopped with the deliberation', () => {
    expect(stateWith([ok(chain[0].key)], () => false)).toMatchObject({ kind: 'next', index: 1 });
    expect(stateWith([failed(chain[0].key, 'cancelled: the deliberation was stopped')])).toMatchObject({
      kind: 'done',
    });
  });
});

/** Answers every call at once; records the models called. */
function recordingProvider(): { provider: ModelProvider; calls: string[] } {
  const calls: string[] = [];
  const provider: ModelProvider = {
    name: 'recording',
    key: 'recording',
    complete: async (request) => {
      calls.push(request.model);
      return { content: 'an answer', servedModel: request.model, simulated: true, usage: null };
    },
  };
  return { provider, calls };
}

function setUp(modeConfig: Record<string, unknown>, provider?: ModelProvider) {
  const mode = modeDefinition('council');
  if (!mode) throw new Error('council is not registered');
  const resolved = mode.resolveConfig(
    {
      question: 'Which is better?',
      modeConfig: {
        councilModels: ['sim/a', 'sim/b', 'sim/slow:timeout'],
        chairmanModel: 'sim/chair',
        ...modeConfig,
      },
    },
    DEFAULTS,
  );
  if (!resolved.ok) throw new Error(JSON.stringify(resolved.fields));
  const store = new MemoryStore('Which is better?', resolved.config);
  const enqueued: string[] = [];
  const runner = new StageRunner(
    modeDefinition,
    store,
    provider ??
      new SimulatedProvider({
        responders: SIMULATED_RESPONDERS,
        fallback: SIMULATED_FALLBACK,
        latencyMs: 0,
        seed: 'quorum-test',
      }),
    { publish: async () => undefined },
    {
      enqueueStage: async (_id, stage) => {
        enqueued.push(stage);
      },
      stageJobState: async () => 'pending',
      rescheduleStage: async () => undefined,
    },
    { historyTurns: 0, deliberationCapMs: 600_000 },
  );
  return { store, runner, enqueued };
}

describe('StageRunner with a quorum, a deadline and fallbacks', () => {
  it('goes on once the quorum answered: the straggler is aborted, stored as cut, and the stage commits once', async () => {
    const { store, runner, enqueued } = setUp({ quorum: 2 });
    const started = Date.now();
    await runner.runStage('m1', 'stage1');
    expect(Date.now() - started).toBeLessThan(5000);
    expect(store.outcomes.stage1.find((o) => o.model === 'sim/slow:timeout')).toMatchObject({
      ok: false,
      error: 'cut: quorum of 2 reached',
    });
    expect(store.rows.filter((r) => r.stageType === 'stage1').map((r) => r.model)).toEqual([
      'sim/a',
      'sim/b',
    ]);
    expect(enqueued).toEqual(['stage2']);
    expect(store.events.filter((e) => e.type === 'stage1_complete')).toHaveLength(1);
    const cut = store.events.find((e) => e.type === 'model_progress' && e.state === 'failed');
    expect(cut).toMatchObject({ participant: 'sim/slow:timeout', error: 'cut: quorum of 2 reached' });
  });

  it('a retried stage whose quorum is stored cuts the rest without calling them', async () => {
    const { provider, calls } = recordingProvider();
    const { store, runner, enqueued } = setUp({ quorum: 2 }, provider);
    // An earlier run stored two answers and died before the straggler's cut was stored.
    store.outcomes.stage1 = [ok('sim/a'), ok('sim/b')];
    await runner.runStage('m1', 'stage1');
    expect(calls).toEqual([]);
    expect(store.outcomes.stage1.find((o) => o.key === 'sim/slow:timeout')).toMatchObject({
      ok: false,
      error: 'cut: quorum of 2 reached',
    });
    expect(enqueued).toEqual(['stage2']);
  });

  it('a retried stage whose earlier run stored a cut cuts the rest the same way', async () => {
    const { provider, calls } = recordingProvider();
    const { store, runner } = setUp({ stageDeadlineMs: 1000 }, provider);
    // An earlier run cut sim/b at its deadline and died before sim/slow's cut was stored.
    store.outcomes.stage1 = [ok('sim/a'), failed('sim/b', 'cut: stage deadline of 1000 ms passed')];
    await runner.runStage('m1', 'stage1');
    expect(calls).toEqual([]);
    expect(store.outcomes.stage1.find((o) => o.key === 'sim/slow:timeout')).toMatchObject({
      error: 'cut: stage deadline of 1000 ms passed',
    });
  });

  it('at the deadline goes on with the minimum answered and cuts the rest', async () => {
    const { store, runner, enqueued } = setUp({ stageDeadlineMs: 1000 });
    const started = Date.now();
    await runner.runStage('m1', 'stage1');
    expect(Date.now() - started).toBeGreaterThanOrEqual(990);
    expect(Date.now() - started).toBeLessThan(5000);
    expect(store.outcomes.stage1.find((o) => o.model === 'sim/slow:timeout')).toMatchObject({
      ok: false,
      error: 'cut: stage deadline of 1000 ms passed',
    });
    expect(enqueued).toEqual(['stage2']);
  });

  it('a retried stage measures its deadline from the stage opening as stored, not from its own start', async () => {
    const { store, runner, enqueued } = setUp({ stageDeadlineMs: 1000 });
    // An earlier run opened the stage 900 ms ago and died before anything settled.
    store.state = { ...store.state, stageOpenedAt: new Date(Date.now() - 900) };
    const started = Date.now();
    await runner.runStage('m1', 'stage1');
    expect(Date.now() - started).toBeLessThan(600);
    expect(store.outcomes.stage1.find((o) => o.model === 'sim/slow:timeout')).toMatchObject({
      ok: false,
      error: 'cut: stage deadline of 1000 ms passed',
    });
    expect(enqueued).toEqual(['stage2']);
  });

  it('asks the next chairman when one fails; the stored calls show each attempt', async () => {
    const { store, runner } = setUp({
      councilModels: ['sim/a', 'sim/b'],
      chairmanModel: 'sim/c:fail',
      chairmanFallbacks: ['sim/d:fail', 'sim/e'],
    });
    for (const stage of ['stage1', 'stage2', 'stage3']) await runner.runStage('m1', stage);
    expect(store.state.status).toBe('complete');
    expect(store.outcomes.stage3.map((o) => [o.model, o.ok])).toEqual([
      ['sim/c:fail', false],
      ['sim/d:fail', false],
      ['sim/e', true],
    ]);
    expect(store.rows.find((r) => r.stageType === 'stage3')?.model).toBe('sim/e');
    const progress = store.events
      .filter((e) => e.type === 'model_progress' && e.stage === 'stage3')
      .map((e) => `${String(e.participant)} ${String(e.state)}`);
    expect(progress).toEqual([
      'sim/c:fail started',
      'sim/c:fail failed',
      'sim/d:fail started',
      'sim/d:fail failed',
      'sim/e started',
      'sim/e succeeded',
    ]);
    expect(store.events.filter((e) => e.type === 'stage3_complete')).toHaveLength(1);
  });

  it('a retried stage resumes the seat at the first model without a stored outcome', async () => {
    const simulated = new SimulatedProvider({
      responders: SIMULATED_RESPONDERS,
      fallback: SIMULATED_FALLBACK,
      latencyMs: 0,
      seed: 'quorum-test',
    });
    const calls: string[] = [];
    const provider: ModelProvider = {
      name: 'recording',
      key: 'recording',
      complete: (request) => {
        calls.push(request.model);
        return simulated.complete(request);
      },
    };
    const { store, runner } = setUp(
      {
        councilModels: ['sim/a', 'sim/b'],
        chairmanModel: 'sim/c:fail',
        chairmanFallbacks: ['sim/d:fail', 'sim/e'],
      },
      provider,
    );
    await runner.runStage('m1', 'stage1');
    await runner.runStage('m1', 'stage2');
    calls.length = 0;
    // An earlier run of stage 3 stored the chairman's failure and died while its first fallback ran.
    store.outcomes.stage3 = [failed('sim/c:fail', 'HTTP 400 from the simulated provider')];
    await runner.runStage('m1', 'stage3');
    expect(calls).toEqual(['sim/d:fail', 'sim/e']);
    expect(store.state.status).toBe('complete');
    expect(store.outcomes.stage3.map((o) => o.model)).toEqual(['sim/c:fail', 'sim/d:fail', 'sim/e']);
    expect(store.events.filter((e) => e.type === 'stage3_complete')).toHaveLength(1);
  });

  it('asks no further fallback once the deliberation ended while a model failed', async () => {
    const calls: string[] = [];
    let store: MemoryStore | null = null;
    const provider: ModelProvider = {
      name: 'recording',
      key: 'recording',
      complete: async (request) => {
        calls.push(request.model);
        if (request.model === 'sim/c') {
          // Cancelled elsewhere as this chairman fails: the stop reaches no call of this worker.
          if (store) store.state = { ...store.state, status: 'cancelled', stage: null };
          throw new Error('upstream error');
        }
        return { content: 'an answer', servedModel: request.model, simulated: true, usage: null };
      },
    };
    const set = setUp(
      { councilModels: ['sim/a', 'sim/b'], chairmanModel: 'sim/c', chairmanFallbacks: ['sim/d', 'sim/e'] },
      provider,
    );
    await set.runner.runStage('m1', 'stage1');
    await set.runner.runStage('m1', 'stage2');
    store = set.store;
    calls.length = 0;
    await set.runner.runStage('m1', 'stage3');
    expect(calls).toEqual(['sim/c']);
    expect(set.store.outcomes.stage3.map((o) => [o.model, o.ok])).toEqual([['sim/c', false]]);
  });

  it('a stop that lands between a failed model and its fallback aborts the fallback as it starts', async () => {
    const { provider, calls } = recordingProvider();
    const failing: ModelProvider = {
      ...provider,
      complete: async (request) => {
        if (request.signal?.aborted) throw new Error('aborted before it was sent');
        if (request.model !== 'sim/c') return provider.complete(request);
        calls.push(request.model);
        throw new Error('upstream error');
      },
    };
    const { store, runner } = setUp(
      { councilModels: ['sim/a', 'sim/b'], chairmanModel: 'sim/c', chairmanFallbacks: ['sim/d'] },
      failing,
    );
    await runner.runStage('m1', 'stage1');
    await runner.runStage('m1', 'stage2');
    // The user's stop lands while the chairman's failure is being stored (it is stored as written):
    // no call of the deliberation is running at that moment, so there is nothing to abort.
    const write = store.writeStage.bind(store);
    store.writeStage = async (messageId, stageWrite) => {
      const result = await write(messageId, stageWrite);
      if (stageWrite.outcomes?.some((o) => o.model === 'sim/c')) {
        await runner.end('m1', 'stage3', null, { kind: 'cancelled', reason: 'Cancelled by the user.' });
      }
      return result;
    };
    calls.length = 0;
    await runner.runStage('m1', 'stage3');
    expect(calls).toEqual(['sim/c']);
    expect(store.state.status).toBe('cancelled');
    expect(store.outcomes.stage3.find((o) => o.model === 'sim/d')).toMatchObject({
      ok: false,
      error: 'cancelled: the deliberation was stopped',
    });
  });

  it('fails with every chairman named when all fail', async () => {
    const { store, runner } = setUp({
      councilModels: ['sim/a', 'sim/b'],
      chairmanModel: 'sim/c:fail',
      chairmanFallbacks: ['sim/d:fail'],
    });
    for (const stage of ['stage1', 'stage2', 'stage3']) await runner.runStage('m1', stage);
    expect(store.state.status).toBe('failed');
    const error = store.events.find((e) => e.type === 'error');
    expect(String(error?.message)).toMatch(/chairman model sim\/d:fail failed.*sim\/c:fail \(/);
  });
});

/** A runner of `mode` over a memory store, its first stage about to run. */
function setUpMode(mode: 'delphi' | 'vote', modeConfig: Record<string, unknown>, stage: string) {
  const definition = modeDefinition(mode);
  if (!definition) throw new Error(`${mode} is not registered`);
  const question = 'How many software engineers will be employed globally by 2030?';
  const resolved = definition.resolveConfig({ question, modeConfig }, DEFAULTS);
  if (!resolved.ok) throw new Error(JSON.stringify(resolved.fields));
  const store = new MemoryStore(question, resolved.config, { mode, stage });
  const runner = new StageRunner(
    modeDefinition,
    store,
    new SimulatedProvider({
      responders: SIMULATED_RESPONDERS,
      fallback: SIMULATED_FALLBACK,
      latencyMs: 0,
      seed: 'quorum-test',
    }),
    { publish: async () => undefined },
    {
      enqueueStage: async () => undefined,
      stageJobState: async () => 'pending',
      rescheduleStage: async () => undefined,
    },
    { historyTurns: 0, deliberationCapMs: 600_000 },
  );
  return { store, runner };
}

describe('a gate counts only the answers its mode can read', () => {
  it('a Delphi round waits past an unparseable estimate instead of cutting members it needs', async () => {
    const { store, runner } = setUpMode(
      'delphi',
      {
        panelistModels: ['sim/a', 'sim/b', 'sim/c:nonnumeric', 'sim/d:delay300', 'sim/e:timeout'],
        facilitatorModel: 'sim/f',
        questionType: 'numeric',
        quorum: 3,
      },
      'classify',
    );
    await runner.runStage('m1', 'classify');
    await runner.runStage('m1', 'round_1');
    // Three answered at once, one without an estimate: only two count, so d is waited for; its
    // estimate is the third, and only e is cut.
    expect(store.state.status).toBe('running');
    expect(store.state.stage).toBe('round_2');
    expect(store.outcomes.round_1.filter((o) => !o.ok).map((o) => [o.model, o.ok ? '' : o.error])).toEqual([
      ['sim/e:timeout', 'cut: quorum of 3 reached'],
    ]);
  });

  it('a Delphi round still goes on at its quorum of readable estimates', async () => {
    const { store, runner } = setUpMode(
      'delphi',
      {
        panelistModels: ['sim/a', 'sim/b', 'sim/c:nonnumeric', 'sim/d', 'sim/e:timeout'],
        facilitatorModel: 'sim/f',
        questionType: 'numeric',
        quorum: 3,
      },
      'classify',
    );
    await runner.runStage('m1', 'classify');
    await runner.runStage('m1', 'round_1');
    expect(store.state.stage).toBe('round_2');
    expect(store.outcomes.round_1.find((o) => o.model === 'sim/e:timeout')).toMatchObject({
      ok: false,
      error: 'cut: quorum of 3 reached',
    });
  });

  it('a retried round counts its stored answers the same way: an unreadable one does not make the quorum', async () => {
    const { store, runner } = setUpMode(
      'delphi',
      {
        panelistModels: ['sim/a', 'sim/b', 'sim/c', 'sim/d', 'sim/e'],
        facilitatorModel: 'sim/f',
        questionType: 'numeric',
        quorum: 3,
      },
      'classify',
    );
    await runner.runStage('m1', 'classify');
    const answer = (key: string, content: string): CallOutcome => ({
      ...(ok(key) as SuccessfulCall),
      content,
    });
    // An earlier run stored three answers, one without an estimate, and died.
    store.outcomes.round_1 = [
      answer('p0', 'ESTIMATE: 100\nCONFIDENCE: 7\nREASONING: r'),
      answer('p1', 'ESTIMATE: 120\nCONFIDENCE: 6\nREASONING: r'),
      answer('p2', 'ESTIMATE: too uncertain to say\nREASONING: no basis'),
    ];
    await runner.runStage('m1', 'round_1');
    expect(store.outcomes.round_1.filter((o) => !o.ok)).toEqual([]);
    expect(store.outcomes.round_1).toHaveLength(5);
    expect(store.state.stage).toBe('round_2');
  });

  it('a vote stage does not count votes that name no shown label', async () => {
    const { store, runner } = setUpMode(
      'vote',
      { models: ['sim/a', 'sim/b:malformed@vote', 'sim/c:delay300@vote'], quorum: 2 },
      'answer',
    );
    await runner.runStage('m1', 'answer');
    await runner.runStage('m1', 'vote');
    // sim/b's vote is unreadable: the quorum of two readable votes needs sim/c's, so it is not cut.
    expect(store.outcomes.vote.filter((o) => !o.ok)).toEqual([]);
  });
});

describe('the request fields of deadlines, quorum and fallbacks', () => {
  const resolve = (
    mode: 'council' | 'jury' | 'delphi' | 'vote' | 'debate',
    modeConfig: Record<string, unknown>,
  ) => modeDefinition(mode)?.resolveConfig({ question: 'Q', modeConfig }, DEFAULTS);

  it('checks a count against the mode minimum and the roster, naming the field', () => {
    expect(resolve('council', { councilModels: ['sim/a', 'sim/b', 'sim/c'], quorum: 1 })).toEqual({
      ok: false,
      fields: { 'modeConfig.quorum': expect.stringMatching(/quorum 1 is below .* minimum of 2/) },
    });
    expect(resolve('council', { councilModels: ['sim/a', 'sim/b', 'sim/c'], quorum: 4 })).toEqual({
      ok: false,
      fields: { 'modeConfig.quorum': 'quorum 4 is more than the 3 council models' },
    });
    expect(resolve('council', { quorum: 2.5 })).toMatchObject({
      ok: false,
      fields: { 'modeConfig.quorum': expect.stringMatching(/whole number/) },
    });
    expect(resolve('delphi', { quorum: 2 })).toMatchObject({
      ok: false,
      fields: { 'modeConfig.quorum': expect.stringMatching(/minimum of 3/) },
    });
    expect(
      resolve('council', { councilModels: ['sim/a', 'sim/b', 'sim/c'], quorum: 2, stageDeadlineMs: 5000 }),
    ).toMatchObject({
      ok: true,
      config: { quorum: 2, stageDeadlineMs: 5000 },
    });
    expect(resolve('debate', { quorum: 0.5 })).toMatchObject({ ok: true, config: { quorum: 0.5 } });
  });

  it('keeps a fallback off its own seat and, for jury and Delphi, off the panel', () => {
    expect(
      resolve('council', { chairmanModel: 'sim/chair', chairmanFallbacks: ['sim/chair'] }),
    ).toMatchObject({
      ok: false,
      fields: { 'modeConfig.chairmanFallbacks': expect.stringMatching(/must not repeat chairmanModel/) },
    });
    expect(resolve('jury', { content: 'x', foremanFallbacks: ['sim/b'] })).toMatchObject({
      ok: false,
      fields: { 'modeConfig.foremanFallbacks': expect.stringMatching(/sim\/b: it is a juror model/) },
    });
    expect(resolve('delphi', { facilitatorFallbacks: ['sim/a'] })).toMatchObject({
      ok: false,
      fields: { 'modeConfig.facilitatorFallbacks': expect.stringMatching(/panelist/) },
    });
    expect(resolve('vote', { chairmanFallbacks: ['sim/x', 'sim/y'] })).toMatchObject({
      ok: true,
      config: { chairmanFallbacks: ['sim/x', 'sim/y'] },
    });
  });

  it('adds nothing to a config that does not ask for them', () => {
    const resolved = resolve('council', {});
    expect(resolved?.ok && Object.keys(resolved.config)).toEqual([
      'councilModels',
      'chairmanModel',
      'timeoutMs',
    ]);
  });
});
