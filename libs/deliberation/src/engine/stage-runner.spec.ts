import { ModelCallError, RetryingProvider, SimulatedProvider, type ModelProvider } from '@conclave/llm';
import { SIMULATED_FALLBACK, SIMULATED_RESPONDERS, modeDefinition } from '../modes';
import { StageRunner, callDeadline, type CallFailureDetail, type StageRunnerOptions } from './stage-runner';
import { LiveCalls } from './live-calls';
import { StopHearing } from './stop-hearing';
import { endingWrite } from './ending';
import { HeldOutcomes, type StoreRetry } from './held-outcomes';
import { MemoryStore } from '../testing/memory-store';
import type { DeliveredEvent, FirstStageStart } from '@conclave/contracts';
import type { CallOutcome, LoadedDeliberation, ModeDefaults } from './types';
import { sleep, until } from '../../../../test/support/wait';

const DEFAULTS: ModeDefaults = {
  timeoutMs: 10_000,
  council: { councilModels: ['sim/a', 'sim/b'], chairmanModel: 'sim/chair' },
  jury: { jurorModels: ['sim/a', 'sim/b', 'sim/c'], foremanModel: 'sim/f' },
  debate: { models: ['sim/a', 'sim/b'] },
  delphi: { panelistModels: ['sim/a', 'sim/b', 'sim/c'], facilitatorModel: 'sim/f' },
  vote: { models: ['sim/a', 'sim/b', 'sim/c'] },
};

async function loadedOf(store: MemoryStore): Promise<LoadedDeliberation> {
  const loaded = await store.load(store.state.messageId);
  if (!loaded) throw new Error('the message is not stored');
  return loaded;
}

function simulatedProvider(): SimulatedProvider {
  return new SimulatedProvider({
    responders: SIMULATED_RESPONDERS,
    fallback: SIMULATED_FALLBACK,
    latencyMs: 0,
    seed: 'engine-test',
  });
}

/** A provider whose calls never answer: they end only when aborted. Records the models called and aborted. */
function hangingProvider(): { provider: ModelProvider; seen: string[]; aborted: string[] } {
  const seen: string[] = [];
  const aborted: string[] = [];
  const provider: ModelProvider = {
    name: 'hanging',
    key: 'hanging',
    complete: (request) =>
      new Promise((_, reject) => {
        seen.push(request.model);
        const abort = () => {
          aborted.push(request.model);
          reject(request.signal.reason as Error);
        };
        request.signal.addEventListener('abort', abort, { once: true });
      }),
  };
  return { provider, seen, aborted };
}

function setUp(provider?: ModelProvider, options: Partial<StageRunnerOptions> = {}) {
  const mode = modeDefinition('council');
  if (!mode) throw new Error('council is not registered');
  const resolved = mode.resolveConfig(
    { question: 'Which is better?', councilModels: ['sim/a', 'sim/b', 'sim/c'], chairmanModel: 'sim/chair' },
    DEFAULTS,
  );
  if (!resolved.ok) throw new Error(JSON.stringify(resolved.fields));
  const store = new MemoryStore('Which is better?', resolved.config);
  const enqueued: string[] = [];
  const published: DeliveredEvent[] = [];
  const runner = new StageRunner(
    modeDefinition,
    store,
    provider ?? simulatedProvider(),
    {
      publish: async (events) => {
        published.push(...events);
      },
    },
    {
      enqueueStage: async (_id, stage) => {
        enqueued.push(stage);
      },
      stageJobState: async () => 'pending',
      rescheduleStage: async () => undefined,
    },
    { historyTurns: 0, deliberationCapMs: 600_000, ...options },
  );
  return { store, runner, enqueued, published };
}

describe('StageRunner', () => {
  it("stores and sends only the user-facing words of a failed call, and logs the provider's detail", async () => {
    const simulated = simulatedProvider();
    const detail =
      'HTTP 503 from llm.internal:8443: upstream http://[redacted]@llm.internal:8443/v1/chat/completions is down';
    const provider = new RetryingProvider(
      {
        name: 'llm.internal:8443',
        key: 'openai-compatible',
        async complete(request) {
          if (request.model !== 'sim/a') return simulated.complete(request);
          throw new ModelCallError(detail, 'http', true, 503, undefined, { provider: 'openai-compatible' });
        },
      },
      { policy: { maxAttempts: 2, baseDelayMs: 0 } },
    );
    const failures: CallFailureDetail[] = [];
    const { store, runner } = setUp(provider, { logCallError: (failure) => failures.push(failure) });

    await runner.runStage('m1', 'stage1');

    const words = 'HTTP 503 from the openai-compatible provider';
    expect(store.outcomes.stage1.find((o) => o.model === 'sim/a')).toMatchObject({ ok: false, error: words });
    const progress = store.events.filter(
      (e) => e.type === 'model_progress' && e.stage === 'stage1' && e.participant === 'sim/a',
    );
    expect(progress.map((e) => [e.state, e.error])).toEqual([
      ['started', undefined],
      ['retrying', words],
      ['failed', words],
    ]);
    expect(JSON.stringify([store.events, store.rows, store.outcomes])).not.toMatch(/llm\.internal|8443|\/v1/);
    expect(failures).toEqual([
      { stage: 'stage1', model: 'sim/a', detail, retry: { attempt: 1, delayMs: 0 } },
      { stage: 'stage1', model: 'sim/a', detail, kind: 'http', status: 503 },
    ]);
  });

  it('opens a stage in one transaction and stores the last settled calls with its commit', async () => {
    const { store, runner, enqueued } = setUp();
    await runner.runStage('m1', 'stage1');
    // three calls with no latency settle together: open, then outcomes + rows + events at once
    expect(store.writes).toEqual(['events', 'outcome+outcome+outcome+rows+events']);
    expect(enqueued).toEqual(['stage2']);
    const types = store.events.map((e) => `${e.type}:${String(e.stage ?? '')}:${String(e.state ?? '')}`);
    expect(types.slice(0, 4)).toEqual([
      'stage1_start::',
      'model_progress:stage1:started',
      'model_progress:stage1:started',
      'model_progress:stage1:started',
    ]);
    expect(types.filter((t) => t === 'model_progress:stage1:succeeded')).toHaveLength(3);
    // The commit also opens the next stage: its start and 'started' for each of its calls.
    expect(types.slice(-5)).toEqual([
      'stage1_complete::',
      'stage2_start::',
      'model_progress:stage2:started',
      'model_progress:stage2:started',
      'model_progress:stage2:started',
    ]);
    expect(store.events.map((e) => e.seq)).toEqual(store.events.map((_, i) => i + 1));
  });

  it('runs the next stage from what its commit left, without loading, planning or opening it again', async () => {
    const { store, runner, enqueued } = setUp();
    await runner.runStage('m1', 'stage1');
    let loads = 0;
    const load = store.load.bind(store);
    store.load = async (messageId) => {
      loads += 1;
      return load(messageId);
    };
    store.writes = [];
    const opened = store.events.length;
    await runner.runStage('m1', 'stage2', { firstStart: true });
    expect(loads).toBe(0);
    // no opening write: the rankings settle together and commit (opening stage3 with it)
    expect(store.writes).toEqual(['outcome+outcome+outcome+rows+events']);
    expect(enqueued).toEqual(['stage2', 'stage3']);
    const stage2Started = store.events.filter((e) => e.stage === 'stage2' && e.state === 'started');
    expect(stage2Started).toHaveLength(3);
    expect(stage2Started.every((e) => e.seq <= opened)).toBe(true);
    // and the stage ran on the state a load returns: the same rows, stage and outcomes
    const carriedRun = structuredClone(store.rows);
    await runner.runStage('m1', 'stage3', { firstStart: true });
    expect(loads).toBe(0);
    expect(store.state.status).toBe('complete');
    expect(store.rows.slice(0, carriedRun.length)).toEqual(carriedRun);
    expect(store.events.map((e) => e.seq)).toEqual(store.events.map((_, i) => i + 1));
  });

  it("runs the next stage from what the commit's write answered it stored, not from a prediction", async () => {
    const simulated = simulatedProvider();
    const prompts: string[] = [];
    const { store, runner } = setUp({
      name: 'recording',
      key: 'recording',
      complete: (request) => {
        prompts.push(JSON.stringify(request.messages));
        return simulated.complete(request);
      },
    });
    // The store says what it stored: here in words of its own, which no prediction could know.
    const write = store.writeStage.bind(store);
    const asked: boolean[] = [];
    store.writeStage = async (messageId, stageWrite) => {
      asked.push(stageWrite.loaded === true);
      const written = await write(messageId, stageWrite);
      if (written.kind !== 'written' || !written.stored) return written;
      const rows = written.stored.rows.map((row) => ({ ...row, content: `${row.content} (as stored)` }));
      return { ...written, stored: { ...written.stored, rows } };
    };
    let loads = 0;
    const load = store.load.bind(store);
    store.load = async (messageId) => {
      loads += 1;
      return load(messageId);
    };
    await runner.runStage('m1', 'stage1');
    // Only the commit that moves on asks for it.
    expect(asked).toEqual([false, true]);
    prompts.length = 0;
    await runner.runStage('m1', 'stage2', { firstStart: true });
    expect(loads).toBe(1);
    expect(prompts).toHaveLength(3);
    for (const prompt of prompts) expect(prompt).toContain('(as stored)');
  });

  it('loads the next stage when the store does not answer with what it stored', async () => {
    const { store, runner } = setUp();
    const write = store.writeStage.bind(store);
    store.writeStage = async (messageId, stageWrite) => {
      const written = await write(messageId, stageWrite);
      return written.kind === 'written' ? { kind: 'written', events: written.events } : written;
    };
    let loads = 0;
    const load = store.load.bind(store);
    store.load = async (messageId) => {
      loads += 1;
      return load(messageId);
    };
    await runner.runStage('m1', 'stage1');
    await runner.runStage('m1', 'stage2', { firstStart: true });
    expect(loads).toBe(2);
    expect(store.state.stage).toBe('stage3');
  });

  it('loads the next stage when its job starts again, or after the deliberation was stopped here', async () => {
    const { store, runner } = setUp();
    let loads = 0;
    const load = store.load.bind(store);
    store.load = async (messageId) => {
      loads += 1;
      return load(messageId);
    };
    await runner.runStage('m1', 'stage1');
    expect(loads).toBe(1);
    // A second start of the stage2 job (after a stall): another process may have run it.
    await runner.runStage('m1', 'stage2', { firstStart: false });
    expect(loads).toBe(2);
    // stage2 carried stage3 over; a stop heard meanwhile drops it, and the job finds the end.
    runner.stopCalls('m1', 'cancelled');
    await store.writeStage('m1', endingWrite('stage3', { kind: 'cancelled', reason: 'stopped' }));
    store.writes = [];
    expect(await runner.runStage('m1', 'stage3', { firstStart: true })).toBeNull();
    expect(loads).toBe(3);
    expect(store.writes).toEqual([]);
  });

  describe('a stop that may have been missed (the control channel broke)', () => {
    /** A provider that counts the calls made, the title's included. */
    function counting() {
      const base = simulatedProvider();
      const models: string[] = [];
      const provider: ModelProvider = {
        name: 'counting',
        complete: (request) => {
          models.push(request.model);
          return base.complete(request);
        },
      };
      return { provider, models };
    }

    it('a stage carried from before a break loads, finds the stop, and calls nobody', async () => {
      const { provider, models } = counting();
      const hearing = new StopHearing();
      const { store, runner } = setUp(provider, { hearing });
      await runner.runStage('m1', 'stage1');
      const calls = models.length;
      // Redis goes away and comes back; the stop stored meanwhile was never announced here.
      hearing.lost();
      await store.writeStage('m1', endingWrite('stage2', { kind: 'cancelled', reason: 'stopped' }));
      hearing.resumed();
      store.writes = [];
      expect(await runner.runStage('m1', 'stage2', { firstStart: true })).toBeNull();
      expect(models).toHaveLength(calls);
      expect(store.writes).toEqual([]);
      expect(store.state.status).toBe('cancelled');
    });

    it('a stage carried while the channel was away is not trusted either', async () => {
      const { provider, models } = counting();
      const hearing = new StopHearing({ hearing: false });
      const { store, runner } = setUp(provider, { hearing });
      await runner.runStage('m1', 'stage1');
      const calls = models.length;
      await store.writeStage('m1', endingWrite('stage2', { kind: 'cancelled', reason: 'stopped' }));
      hearing.resumed();
      expect(await runner.runStage('m1', 'stage2', { firstStart: true })).toBeNull();
      expect(models).toHaveLength(calls);
    });

    it('a stage carried after a stop was heard here (the stop raced the commit) loads', async () => {
      const { provider, models } = counting();
      const live = new LiveCalls(null);
      const { store, runner } = setUp(provider, { live });
      await runner.runStage('m1', 'stage1');
      const calls = models.length;
      // Heard before the commit's carry: nothing was carried yet to drop.
      live.stop('m1', 'stopped');
      await store.writeStage('m1', endingWrite('stage2', { kind: 'cancelled', reason: 'stopped' }));
      expect(await runner.runStage('m1', 'stage2', { firstStart: true })).toBeNull();
      expect(models).toHaveLength(calls);
    });

    it("a new conversation's job stored before the channel was back loads instead of running from its start", async () => {
      const { provider, models } = counting();
      let now = Date.parse('2026-01-01T00:00:10Z');
      const hearing = new StopHearing({ hearing: false, now: () => now });
      const { store, runner } = setUp(provider, { hearing });
      store.state.needsTitle = true;
      const loaded = await loadedOf(store);
      const start: FirstStageStart = {
        conversationId: loaded.conversationId,
        mode: loaded.mode,
        question: loaded.question,
        config: loaded.config,
        createdAt: '2026-01-01T00:00:09Z',
      };
      await store.writeStage('m1', endingWrite('stage1', { kind: 'cancelled', reason: 'stopped' }));
      now += 5000;
      hearing.resumed();
      store.writes = [];
      expect(await runner.runStage('m1', 'stage1', { firstStart: true, start })).toBeNull();
      // Not even the title call: the load found the stop before anything started.
      expect(models).toEqual([]);
      expect(store.writes).toEqual([]);
    });
  });

  describe("a new conversation's first stage, carried in its job", () => {
    const startOf = (loaded: LoadedDeliberation): FirstStageStart => ({
      conversationId: loaded.conversationId,
      mode: loaded.mode,
      question: loaded.question,
      config: loaded.config,
      createdAt: loaded.createdAt.toISOString(),
    });
    const counted = (store: MemoryStore) => {
      const count = { loads: 0 };
      const load = store.load.bind(store);
      store.load = async (messageId) => {
        count.loads += 1;
        return load(messageId);
      };
      return count;
    };

    it('runs from the start on the first start, without a load, and still writes its opening', async () => {
      const { store, runner, enqueued } = setUp();
      store.state.needsTitle = true;
      const start = startOf(await loadedOf(store));
      const count = counted(store);
      await runner.runStage('m1', 'stage1', { firstStart: true, start });
      expect(count.loads).toBe(0);
      expect(store.writes[0]).toBe('events');
      expect(store.events[0]).toMatchObject({ type: 'stage1_start' });
      expect(enqueued).toEqual(['stage2']);
      // The title call ran beside the stage's calls, as for a loaded first stage.
      expect(store.outcomes.title).toHaveLength(1);
      await runner.runStage('m1', 'stage2', { firstStart: true });
      await runner.runStage('m1', 'stage3', { firstStart: true });
      expect(count.loads).toBe(0);
      expect(store.state.status).toBe('complete');
    });

    it('loads instead when the job starts again', async () => {
      const { store, runner } = setUp();
      const start = startOf(await loadedOf(store));
      const count = counted(store);
      await runner.runStage('m1', 'stage1', { firstStart: false, start });
      expect(count.loads).toBe(1);
    });

    it('sees a stop stored before the job started: the calls are abandoned, no rows, the end kept', async () => {
      const { provider, seen } = hangingProvider();
      // A title call left running would hang this test past its timeout.
      const { store, runner, enqueued } = setUp(provider, { titleTimeoutMs: 600_000 });
      store.state.needsTitle = true;
      const start = startOf(await loadedOf(store));
      await store.writeStage('m1', endingWrite('stage1', { kind: 'cancelled', reason: 'stopped' }));
      await runner.runStage('m1', 'stage1', { firstStart: true, start });
      expect(store.state.status).toBe('cancelled');
      expect(store.rows).toEqual([]);
      expect(enqueued).toEqual([]);
      expect(store.events.filter((e) => e.type === 'stage1_start')).toEqual([]);
      expect((store.outcomes.stage1 ?? []).filter((o) => o.ok)).toEqual([]);
      // The title call was abandoned with them: nothing but its stopped outcome.
      expect((store.outcomes.title ?? []).filter((o) => o.ok)).toEqual([]);
      expect(seen).toContain('sim/a');
    }, 10_000);

    it('abandons the calls of a deliberation deleted before its job started, the title call too', async () => {
      const { provider, aborted } = hangingProvider();
      // Ends only once every call, the title's among them, has been aborted.
      const { store, runner, enqueued } = setUp(provider, { titleTimeoutMs: 600_000 });
      store.state.needsTitle = true;
      const start = startOf(await loadedOf(store));
      store.writeStage = async () => ({ kind: 'missing' });
      await runner.runStage('m1', 'stage1', { firstStart: true, start });
      // The three council calls and the title's.
      expect(aborted).toHaveLength(4);
      expect(aborted).toEqual(expect.arrayContaining(['sim/a', 'sim/b', 'sim/c']));
      expect(enqueued).toEqual([]);
    }, 10_000);
  });

  it("stores and parses a model's output without the marker lines of its own prompt", async () => {
    const base = simulatedProvider();
    let echoed = 0;
    // Models asked to restate the question echo its fence: the prompt's markers around the answer.
    const provider: ModelProvider = {
      name: 'echoing',
      async complete(request) {
        const prompt = request.messages.map((m) => m.content).join('\n');
        const open = /<<<[A-Z][A-Z ]*? [0-9a-f]{16}>>>/.exec(prompt)?.[0];
        const close = /<<<END [A-Z][A-Z ]*? [0-9a-f]{16}>>>/.exec(prompt)?.[0];
        const answer = await base.complete(request);
        if (!open || !close) return answer;
        echoed++;
        return { ...answer, content: `${open}\n${answer.content}\n  ${close}  \nAs asked: ${open} done` };
      },
    };
    const { store, runner } = setUp(provider);
    await runner.runStage('m1', 'stage1');
    await runner.runStage('m1', 'stage2');
    const texts = [
      ...Object.values(store.outcomes).flatMap((o) => o.map((c) => (c.ok ? c.content : ''))),
      ...store.rows.map((r) => r.content),
      JSON.stringify(store.rows.map((r) => r.parsedData)),
    ];
    expect(echoed).toBe(3);
    expect(texts.length).toBeGreaterThan(6);
    for (const text of texts) expect(text).not.toMatch(/<<<|>>>/);
    const rankings = store.rows.filter((r) => r.stageType === 'stage2');
    expect(rankings).toHaveLength(3);
    for (const row of rankings) {
      expect(row.content).toMatch(/\nAs asked: done$/);
      expect((row.parsedData as { parsedRanking?: string[] }).parsedRanking).toHaveLength(3);
    }
  });

  it('stores calls that settle apart in transactions of their own, the last with the commit', async () => {
    const slow = new Set(['sim/c']);
    const base = simulatedProvider();
    const provider: ModelProvider = {
      name: 'slow-for-one',
      async complete(request) {
        if (slow.has(request.model)) await sleep(30);
        return base.complete(request);
      },
    };
    const { store, runner } = setUp(provider);
    await runner.runStage('m1', 'stage1');
    expect(store.writes).toEqual(['events', 'outcome+outcome+events', 'outcome+rows+events']);
  });

  it('commits a stage whose calls an earlier run stored in one transaction, without calling again', async () => {
    const calls: string[] = [];
    const simulated = simulatedProvider();
    const { store, runner } = setUp({
      name: 'counting',
      complete(request) {
        calls.push(request.model);
        return simulated.complete(request);
      },
    });
    await runner.runStage('m1', 'stage1');
    expect(calls).toHaveLength(3);
    // An earlier run of stage2 stored every ranking and died before committing.
    const mode = modeDefinition('council');
    const loaded = await loadedOf(store);
    const planned = mode?.plan('stage2', { ...loaded, elapsedMs: 0, deliberationCapMs: 600_000 }) ?? [];
    expect(planned).toHaveLength(3);
    store.outcomes.stage2 = planned.map((call) => ({
      ok: true,
      key: call.key,
      model: call.model,
      content: 'FINAL RANKING:\n1. Response A\n2. Response B\n3. Response C',
      servedModel: call.model,
      responseTimeMs: 5,
      promptTokens: null,
      completionTokens: null,
      costUsd: null,
      simulated: true,
    }));
    store.writes = [];
    await runner.runStage('m1', 'stage2');
    expect(calls).toHaveLength(3);
    expect(store.writes).toEqual(['rows+events']);
    expect(store.state.stage).toBe('stage3');
  });

  it('stores a retry notice before the call settles, however slow its write', async () => {
    const simulated = simulatedProvider();
    const { store, runner } = setUp({
      name: 'retries-once',
      async complete(request) {
        // Reports the retry without waiting for the notice, as any provider may.
        if (request.model === 'sim/a') void request.onRetry?.({ attempt: 1, delayMs: 0, reason: 'HTTP 503' });
        return simulated.complete(request);
      },
    });
    const write = store.writeStage.bind(store);
    store.writeStage = async (messageId, stageWrite) => {
      if (stageWrite.events.some((e) => e.payload.state === 'retrying')) {
        await sleep(50);
      }
      return write(messageId, stageWrite);
    };
    await runner.runStage('m1', 'stage1');
    const forA = store.events
      .filter((e) => e.type === 'model_progress' && e.stage === 'stage1' && e.participant === 'sim/a')
      .map((e) => e.state);
    expect(forA).toEqual(['started', 'retrying', 'succeeded']);
    const types = store.events.map((e) => e.type);
    expect(types[types.indexOf('stage2_start') - 1]).toBe('stage1_complete');
  });

  it('starts the calls while the opening is written, and writes nothing of theirs before it', async () => {
    const simulated = simulatedProvider();
    const log: string[] = [];
    const { store, runner } = setUp({
      name: 'logging',
      async complete(request) {
        log.push(`call ${request.model}`);
        if (request.model === 'sim/a') void request.onRetry?.({ attempt: 1, delayMs: 0, reason: 'HTTP 503' });
        return simulated.complete(request);
      },
    });
    const write = store.writeStage.bind(store);
    store.writeStage = async (messageId, stageWrite) => {
      const opening = stageWrite.markRunning === true;
      if (opening) await sleep(40);
      const written = await write(messageId, stageWrite);
      log.push(opening ? 'opened' : 'written');
      return written;
    };
    await runner.runStage('m1', 'stage1');
    expect(log.slice(0, 4)).toEqual(['call sim/a', 'call sim/b', 'call sim/c', 'opened']);
    const states = store.events
      .filter((e) => e.type === 'model_progress' && e.stage === 'stage1')
      .map((e) => e.state);
    expect(states.slice(0, 3)).toEqual(['started', 'started', 'started']);
    expect(states.slice(3).sort()).toEqual(['retrying', 'succeeded', 'succeeded', 'succeeded']);
    expect(store.events.map((e) => e.seq)).toEqual(store.events.map((_, i) => i + 1));
  });

  it('abandons the calls and stores nothing of them when the opening cannot be written', async () => {
    const { provider, aborted } = hangingProvider();
    const { store, runner } = setUp(provider);
    store.writeStage = async () => {
      throw new Error('connection terminated');
    };
    await expect(runner.runStage('m1', 'stage1')).rejects.toThrow('connection terminated');
    expect(aborted.sort()).toEqual(['sim/a', 'sim/b', 'sim/c']);
    expect(store.outcomes.stage1 ?? []).toEqual([]);
    expect(store.events).toEqual([]);
  });

  it('reduces with the outcome an earlier run stored when it stands in for a fresh one', async () => {
    const { store, runner } = setUp();
    const mode = modeDefinition('council');
    const planned =
      mode?.plan('stage1', { ...(await loadedOf(store)), elapsedMs: 0, deliberationCapMs: 1 }) ?? [];
    const runAnswer = runner.runStage('m1', 'stage1');
    // While the calls run, a concurrent run of the same stage stores its own answer for the first call.
    store.outcomes.stage1 = [
      {
        ok: true,
        key: planned[0].key,
        model: planned[0].model,
        content: 'The answer stored by the other run.',
        servedModel: planned[0].model,
        responseTimeMs: 7,
        promptTokens: null,
        completionTokens: null,
        costUsd: null,
        simulated: true,
      },
    ];
    await runAnswer;
    const first = store.rows.find((r) => r.model === planned[0].model && r.stageType === 'stage1');
    expect(first?.content).toBe('The answer stored by the other run.');
    // The write answered 'replaced' with the stored outcomes: the stage was reduced from them and
    // written again, without outcomes.
    expect(store.writes.slice(-2)).toEqual(['outcome+outcome+outcome', 'rows+events']);
  });
});

describe('StageRunner.failPermanently', () => {
  it('ends the message with its error event through the stage write, once', async () => {
    const finished: string[] = [];
    const { store, runner } = setUp(undefined, {
      onFinished: async (id) => {
        finished.push(id);
      },
    });
    await runner.failPermanently('m1', 'The deliberation stopped.');
    expect(store.state.status).toBe('failed');
    expect(store.writes).toEqual(['events']);
    expect(store.events.map((e) => [e.type, e.message])).toEqual([['error', 'The deliberation stopped.']]);
    await runner.failPermanently('m1', 'again');
    expect(store.events).toHaveLength(1);
    expect(finished).toEqual(['m1']);
  });
});

describe('callDeadline', () => {
  it('aborts with a TimeoutError when the time is up, and not after dispose', async () => {
    const timed = callDeadline(20);
    await sleep(40);
    expect(timed.signal.aborted).toBe(true);
    expect((timed.signal.reason as Error).name).toBe('TimeoutError');
    const disposed = callDeadline(20);
    disposed.dispose();
    await sleep(40);
    expect(disposed.signal.aborted).toBe(false);
  });

  it('follows the abandon signal, already aborted or later', () => {
    const early = new AbortController();
    early.abort(new Error('opening failed'));
    const abandoned = callDeadline(10_000, early.signal);
    expect(abandoned.signal.reason).toEqual(new Error('opening failed'));
    abandoned.dispose();
    const late = new AbortController();
    const deadline = callDeadline(10_000, late.signal);
    late.abort(new Error('later'));
    expect(deadline.signal.aborted).toBe(true);
    deadline.dispose();
  });
});

describe('StageRunner, live calls and stops', () => {
  function slowSimulated(latencyMs: number) {
    return new SimulatedProvider({
      responders: SIMULATED_RESPONDERS,
      fallback: SIMULATED_FALLBACK,
      latencyMs,
      latencyJitter: 0,
      streamPieces: 10,
      seed: 'engine-live',
    });
  }

  it('streams each call through LiveCalls, and its succeeded event carries the answer', async () => {
    const sent: { text: string; offset: number; call: string }[] = [];
    const live = new LiveCalls(
      {
        sendDeltas: async (_id, deltas) => {
          sent.push(...deltas);
          return true;
        },
        sendPartials: async () => undefined,
      },
      undefined,
      5,
    );
    const { store, runner } = setUp(slowSimulated(60), { live });
    const running = runner.runStage('m1', 'stage1');
    await sleep(10);
    live.watch('m1', 'r');
    await running;
    for (const outcome of store.outcomes.stage1) {
      if (!outcome.ok) throw new Error('a call failed');
      const pieces = sent.filter((d) => d.call === `stage1:${outcome.key}`);
      // what was sent after the watch continues the text at its offsets and ends with the answer
      const first = pieces[0]?.offset ?? outcome.content.length;
      const text = pieces.map((d) => d.text).join('');
      expect(outcome.content.slice(first)).toBe(text);
    }
    const succeeded = store.events.filter((e) => e.type === 'model_progress' && e.state === 'succeeded');
    expect(succeeded).toHaveLength(3);
    for (const event of succeeded) {
      const outcome = store.outcomes.stage1.find((o) => o.model === event.participant);
      expect(outcome?.ok && event.content).toBe(outcome?.ok ? outcome.content : undefined);
    }
  });

  it('marks a truncated answer in its succeeded event and keeps the finish reason on the call', async () => {
    const simulated = simulatedProvider();
    const provider: ModelProvider = {
      name: 'cut',
      key: 'openai-compatible',
      async complete(request) {
        const completion = await simulated.complete(request);
        return request.model === 'sim/b' ? { ...completion, finishReason: 'length' } : completion;
      },
    };
    const { store, runner } = setUp(provider);
    await runner.runStage('m1', 'stage1');
    const progress = (model: string) =>
      store.events.find(
        (e) => e.type === 'model_progress' && e.state === 'succeeded' && e.participant === model,
      );
    expect(progress('sim/b')).toMatchObject({ truncated: true });
    expect(progress('sim/a')).not.toHaveProperty('truncated');
    expect(store.outcomes.stage1.find((o) => o.model === 'sim/b')).toMatchObject({ finishReason: 'length' });
  });

  it('a stop aborts the calls in flight at once: their outcomes are kept, the stage is not committed, nothing follows', async () => {
    const live = new LiveCalls(null);
    const { store, runner, enqueued } = setUp(slowSimulated(5000), { live });
    const started = Date.now();
    const running = runner.runStage('m1', 'stage1');
    await sleep(50);
    const ended = await runner.end('m1', 'stage1', null, {
      kind: 'cancelled',
      reason: 'Cancelled by the user.',
    });
    expect(ended.kind).toBe('written');
    await running;
    expect(Date.now() - started).toBeLessThan(2000);
    expect(store.state.status).toBe('cancelled');
    expect(store.events.at(-1)).toMatchObject({
      type: 'cancelled',
      reason: 'Cancelled by the user.',
    });
    expect(store.rows).toEqual([]);
    expect(enqueued).toEqual([]);
    expect(store.outcomes.stage1).toHaveLength(3);
    for (const outcome of store.outcomes.stage1) {
      expect(outcome).toMatchObject({ ok: false, error: 'cancelled: the deliberation was stopped' });
    }
    // a second stop finds it ended
    expect((await runner.end('m1', null, null, { kind: 'cancelled', reason: 'again' })).kind).toBe('skipped');
  });

  it('a stop that lands after the stage was loaded, before its calls started, still abandons them', async () => {
    const { store, runner, enqueued } = setUp(slowSimulated(5000));
    const load = store.load.bind(store);
    store.load = async (messageId: string) => {
      const loaded = await load(messageId);
      await store.writeStage(messageId, endingWrite('stage1', { kind: 'cancelled', reason: 'Stop.' }));
      return loaded;
    };
    const started = Date.now();
    await runner.runStage('m1', 'stage1');
    expect(Date.now() - started).toBeLessThan(2000);
    expect(store.events.map((e) => e.type)).toEqual(['cancelled']);
    expect(store.rows).toEqual([]);
    expect(enqueued).toEqual([]);
    for (const outcome of store.outcomes.stage1) {
      expect(outcome).toMatchObject({ ok: false, error: 'stopped: the deliberation ended' });
    }
  });

  it('the time cap ends the deliberation the same way, without waiting for the calls to time out', async () => {
    // council is exempt from the cap (01-council.md §F): run a jury
    const mode = modeDefinition('jury');
    if (!mode) throw new Error('jury is not registered');
    const resolved = mode.resolveConfig(
      { question: 'Judge it', modeConfig: { content: 'Text', jurorModels: ['sim/a', 'sim/b', 'sim/c'] } },
      DEFAULTS,
    );
    if (!resolved.ok) throw new Error(JSON.stringify(resolved.fields));
    const store = new MemoryStore('Judge it', resolved.config, { mode: 'jury', stage: mode.firstStage });
    const enqueued: string[] = [mode.firstStage];
    const runner = new StageRunner(
      modeDefinition,
      store,
      slowSimulated(5000),
      { publish: async () => undefined },
      {
        enqueueStage: async (_id, stage) => {
          enqueued.push(stage);
        },
        stageJobState: async () => 'pending',
        rescheduleStage: async () => undefined,
      },
      { historyTurns: 0, deliberationCapMs: 1000 },
    );
    const started = Date.now();
    for (let i = 0; i < enqueued.length; i++) await runner.runStage('m1', enqueued[i]);
    expect(Date.now() - started).toBeLessThan(3000);
    expect(store.state.status).toBe('failed');
    expect(store.events.at(-1)).toMatchObject({
      type: 'error',
      message: 'The deliberation ran past its 1 s limit and was stopped.',
    });
    const jurors = Object.values(store.outcomes).flat();
    expect(jurors).toHaveLength(3);
    for (const outcome of jurors)
      expect(outcome).toMatchObject({ ok: false, error: 'stopped: the deliberation ended' });
  });
});

describe('StageRunner, storage away while calls settle', () => {
  class Unavailable extends Error {
    readonly code = 'ECONNREFUSED';
  }
  const storeRetry = (maxBytes: number): StoreRetry => ({
    isUnavailable: (error) => error instanceof Unavailable,
    maxWaitMs: 60_000,
    held: new HeldOutcomes(maxBytes),
    sleep: (ms) => sleep(Math.min(ms, 5)),
  });
  /** Counts the calls the provider was asked for, per model. */
  const counting = (inner: ModelProvider) => {
    const calls: string[] = [];
    const provider: ModelProvider = {
      name: 'counting',
      key: 'counting',
      complete: (request) => {
        calls.push(request.model);
        return inner.complete(request);
      },
    };
    return { provider, calls };
  };
  /** Makes the store refuse writes (as if PostgreSQL were away) until `back()`; `when` picks which. */
  const outage = (store: MemoryStore, when: (write: { markRunning?: boolean }) => boolean) => {
    const write = store.writeStage.bind(store);
    let down = true;
    let refused = 0;
    store.writeStage = async (messageId, stageWrite) => {
      if (down && when(stageWrite)) {
        refused += 1;
        throw new Unavailable('connect ECONNREFUSED');
      }
      return write(messageId, stageWrite);
    };
    return {
      back: () => {
        down = false;
      },
      refused: () => refused,
    };
  };

  it('keeps the answers that arrived and stores them once storage is back, asking for none again', async () => {
    const { provider, calls } = counting(simulatedProvider());
    const retry = storeRetry(1024 * 1024);
    const { store, runner, enqueued } = setUp(provider, { storeRetry: retry });
    const fault = outage(store, (w) => w.markRunning !== true);
    const run = runner.runStage('m1', 'stage1');
    await until(() => fault.refused() >= 3);
    expect(retry.held.outcomes).toBeGreaterThan(0);
    fault.back();
    await run;
    expect(calls.sort()).toEqual(['sim/a', 'sim/b', 'sim/c']);
    expect((store.outcomes.stage1 ?? []).map((o) => o.model).sort()).toEqual(['sim/a', 'sim/b', 'sim/c']);
    expect(enqueued).toEqual(['stage2']);
    expect(retry.held.bytes).toBe(0);
  });

  it('lets the calls run on while the opening waits for storage', async () => {
    const { provider, calls } = counting(simulatedProvider());
    const { store, runner, enqueued } = setUp(provider, { storeRetry: storeRetry(1024 * 1024) });
    const fault = outage(store, () => true);
    const run = runner.runStage('m1', 'stage1');
    await until(() => fault.refused() >= 3);
    fault.back();
    await run;
    expect(calls.sort()).toEqual(['sim/a', 'sim/b', 'sim/c']);
    expect((store.outcomes.stage1 ?? []).every((o) => o.ok)).toBe(true);
    expect(enqueued).toEqual(['stage2']);
  });

  it('fails the stage, aborts the calls in flight and stores nothing of them once the answers are over the bound', async () => {
    const { provider, aborted } = hangingProvider();
    const quick = simulatedProvider();
    const retry = storeRetry(0);
    const { store, runner } = setUp(
      {
        name: 'one-quick',
        key: 'one-quick',
        // sim/a answers at once; the others hang until aborted.
        complete: (request) =>
          request.model === 'sim/a' ? quick.complete(request) : provider.complete(request),
      },
      {
        storeRetry: retry,
        onUnstored: (messageId, calls) => unstored.push(...calls.map((c) => ({ messageId, ...c }))),
      },
    );
    const unstored: { messageId: string; stage: string; outcome: CallOutcome }[] = [];
    outage(store, (w) => w.markRunning !== true);
    await expect(runner.runStage('m1', 'stage1')).rejects.toBeInstanceOf(Unavailable);
    await until(() => aborted.length === 2);
    expect(aborted.sort()).toEqual(['sim/b', 'sim/c']);
    expect(store.outcomes.stage1 ?? []).toEqual([]);
    expect(retry.held.bytes).toBe(0);
    // Every call made is handed on to be counted: the answer that could not be stored, and the
    // aborted ones (the provider may bill them).
    await until(() => unstored.length === 3);
    expect(
      unstored
        .map((u) => [u.messageId, u.stage, u.outcome.model, u.outcome.ok])
        .sort((a, b) => String(a[2]).localeCompare(String(b[2]))),
    ).toEqual([
      ['m1', 'stage1', 'sim/a', true],
      ['m1', 'stage1', 'sim/b', false],
      ['m1', 'stage1', 'sim/c', false],
    ]);
  });

  it('a commit applied before its reply was lost: nothing enqueued twice, and its stored calls not handed on as unstored', async () => {
    const unstored: string[] = [];
    const { store, runner, enqueued } = setUp(undefined, {
      storeRetry: storeRetry(1024 * 1024),
      onUnstored: (_messageId, calls) => unstored.push(...calls.map((c) => c.outcome.model)),
    });
    // The commit's first attempt is applied, then its connection goes before the reply.
    const write = store.writeStage.bind(store);
    let lost = 0;
    store.writeStage = async (messageId, stageWrite) => {
      const written = await write(messageId, stageWrite);
      if (stageWrite.update?.stage === 'stage2' && lost++ === 0)
        throw new Unavailable('Connection terminated');
      return written;
    };
    await expect(runner.runStage('m1', 'stage1')).rejects.toBeInstanceOf(Unavailable);
    expect(enqueued).toEqual([]);
    // The job runs again, finds the stage committed and moves on once.
    await runner.runStage('m1', 'stage1');
    expect(enqueued).toEqual(['stage2']);
    expect((store.outcomes.stage1 ?? []).map((o) => o.model).sort()).toEqual(['sim/a', 'sim/b', 'sim/c']);
    // They are stored: counting them again as unstored would bill them twice.
    expect(unstored).toEqual([]);
  });

  it('answers that do not fit the bound fail their own stage only: the stages already waiting wait on', async () => {
    // One bound for the worker; stage A's answers fit it, stage B's (one huge answer) do not.
    const retry = storeRetry(64 * 1024);
    const a = counting(simulatedProvider());
    const first = setUp(a.provider, { storeRetry: retry });
    const faultA = outage(first.store, (w) => w.markRunning !== true);
    const runA = first.runner.runStage('m1', 'stage1');
    let endedA = false;
    void runA.then(
      () => (endedA = true),
      () => (endedA = true),
    );
    await until(() => faultA.refused() >= 3 && retry.held.outcomes > 0);

    const huge: ModelProvider = {
      name: 'huge',
      key: 'huge',
      complete: async () => ({
        content: 'x'.repeat(200_000),
        servedModel: 'sim/a',
        usage: null,
        simulated: true,
      }),
    };
    const second = setUp(huge, { storeRetry: retry });
    // B's writes take a while to be refused (a slow outage): A's writes are tried again meanwhile.
    const write = second.store.writeStage.bind(second.store);
    second.store.writeStage = async (messageId, stageWrite) => {
      if (stageWrite.markRunning === true) return write(messageId, stageWrite);
      await new Promise((resolve) => setTimeout(resolve, 300));
      throw new Unavailable('connect ETIMEDOUT');
    };
    await expect(second.runner.runStage('m1', 'stage1')).rejects.toBeInstanceOf(Unavailable);
    const refusedBefore = faultA.refused();
    await until(() => faultA.refused() > refusedBefore + 3);
    expect(endedA).toBe(false);

    faultA.back();
    await runA;
    expect(a.calls.sort()).toEqual(['sim/a', 'sim/b', 'sim/c']);
    expect((first.store.outcomes.stage1 ?? []).map((o) => o.model).sort()).toEqual([
      'sim/a',
      'sim/b',
      'sim/c',
    ]);
    expect(first.enqueued).toEqual(['stage2']);
    expect(retry.held.bytes).toBe(0);
  });

  it('the time cap while storage is away aborts the calls at once and writes the end once storage is back', async () => {
    const mode = modeDefinition('jury');
    if (!mode) throw new Error('jury is not registered');
    const resolved = mode.resolveConfig(
      {
        question: 'Judge it',
        modeConfig: { content: 'Text', jurorModels: ['sim/a', 'sim/b', 'sim/c'], timeoutMs: 60_000 },
      },
      DEFAULTS,
    );
    if (!resolved.ok) throw new Error(JSON.stringify(resolved.fields));
    const store = new MemoryStore('Judge it', resolved.config, { mode: 'jury', stage: mode.firstStage });
    const enqueued: string[] = [];
    const { provider, aborted } = hangingProvider();
    const runner = new StageRunner(
      modeDefinition,
      store,
      provider,
      { publish: async () => undefined },
      {
        enqueueStage: async (_id, stage) => {
          enqueued.push(stage);
        },
        stageJobState: async () => 'pending',
        rescheduleStage: async () => undefined,
      },
      // The calls would end at their own timeout only after 60 s.
      { historyTurns: 0, deliberationCapMs: 1000, storeRetry: storeRetry(1024 * 1024) },
    );
    // The first stage calls no model; the next one calls the jurors.
    await runner.runStage('m1', mode.firstStage);
    expect(enqueued).toHaveLength(1);
    const [jurors] = enqueued.splice(0);
    // Its opening goes through; PostgreSQL is away from then on (the ending write too).
    const fault = outage(store, (w) => w.markRunning !== true);
    const run = runner.runStage('m1', jurors);
    await until(() => aborted.length === 3, 20_000);
    expect(store.state.status).not.toBe('failed');
    fault.back();
    await run;
    expect(store.state.status).toBe('failed');
    expect(store.events.filter((e) => e.type === 'error')).toEqual([
      expect.objectContaining({ message: 'The deliberation ran past its 1 s limit and was stopped.' }),
    ]);
    const outcomes = Object.values(store.outcomes).flat();
    expect(outcomes).toHaveLength(3);
    for (const outcome of outcomes)
      expect(outcome).toMatchObject({ ok: false, error: 'stopped: the deliberation ended' });
    expect(enqueued).toEqual([]);
  });

  it('the time cap while PostgreSQL does not answer at all (a partition) aborts the calls at once all the same', async () => {
    const mode = modeDefinition('jury');
    if (!mode) throw new Error('jury is not registered');
    const resolved = mode.resolveConfig(
      {
        question: 'Judge it',
        modeConfig: { content: 'Text', jurorModels: ['sim/a', 'sim/b', 'sim/c'], timeoutMs: 60_000 },
      },
      DEFAULTS,
    );
    if (!resolved.ok) throw new Error(JSON.stringify(resolved.fields));
    const store = new MemoryStore('Judge it', resolved.config, { mode: 'jury', stage: mode.firstStage });
    const enqueued: string[] = [];
    const { provider, aborted } = hangingProvider();
    const runner = new StageRunner(
      modeDefinition,
      store,
      provider,
      { publish: async () => undefined },
      {
        enqueueStage: async (_id, stage) => {
          enqueued.push(stage);
        },
        stageJobState: async () => 'pending',
        rescheduleStage: async () => undefined,
      },
      // The calls would end at their own timeout only after 60 s.
      {
        historyTurns: 0,
        deliberationCapMs: 1000,
        storeRetry: { ...storeRetry(1024 * 1024), attemptMs: 1000 },
      },
    );
    // The first stage calls no model; the next one calls the jurors.
    await runner.runStage('m1', mode.firstStage);
    expect(enqueued).toHaveLength(1);
    const [jurors] = enqueued.splice(0);
    // Its opening goes through; PostgreSQL is away from then on (the ending write too).
    const fault = outage(store, (w) => w.markRunning !== true);
    // The ending's first attempt gets no answer at all.
    const refuse = store.writeStage.bind(store);
    let hung = 0;
    store.writeStage = (messageId, stageWrite) =>
      stageWrite.update?.status === 'failed' && hung++ === 0
        ? new Promise<never>(() => undefined)
        : refuse(messageId, stageWrite);
    const run = runner.runStage('m1', jurors);
    await until(() => aborted.length === 3, 20_000);
    expect(hung).toBeGreaterThan(0);
    expect(store.state.status).not.toBe('failed');
    fault.back();
    await run;
    expect(store.state.status).toBe('failed');
    expect(store.events.filter((e) => e.type === 'error')).toEqual([
      expect.objectContaining({ message: 'The deliberation ran past its 1 s limit and was stopped.' }),
    ]);
    const outcomes = Object.values(store.outcomes).flat();
    expect(outcomes).toHaveLength(3);
    for (const outcome of outcomes)
      expect(outcome).toMatchObject({ ok: false, error: 'stopped: the deliberation ended' });
    expect(enqueued).toEqual([]);
  });

  it("a batch item's last commit applied before its reply was lost: the job run again moves the batch on", async () => {
    const finished: (string | null)[] = [];
    const { store, runner, enqueued, published } = setUp(undefined, {
      storeRetry: storeRetry(1024 * 1024),
      onFinished: async (_messageId, batchId) => {
        finished.push(batchId);
      },
    });
    store.state.batchId = 'b1';
    await runner.runStage('m1', 'stage1');
    await runner.runStage('m1', 'stage2');
    expect(enqueued).toEqual(['stage2', 'stage3']);
    // The last commit is applied, then its connection goes before the reply.
    const write = store.writeStage.bind(store);
    let lost = 0;
    store.writeStage = async (messageId, stageWrite) => {
      const written = await write(messageId, stageWrite);
      if (stageWrite.update?.status === 'complete' && lost++ === 0)
        throw new Unavailable('Connection terminated');
      return written;
    };
    await expect(runner.runStage('m1', 'stage3')).rejects.toBeInstanceOf(Unavailable);
    expect(store.state.status).toBe('complete');
    expect(finished).toEqual([]);
    expect(published.some((e) => e.type === 'complete')).toBe(false);
    // Its job runs again (not its first start), finds the message done, publishes what was stored
    // and lets the batch go on.
    await runner.runStage('m1', 'stage3');
    expect(finished).toEqual(['b1']);
    await until(() => published.some((e) => e.type === 'complete'));
  });

  it('without StoreRetry, a write that meets the outage fails the stage at once', async () => {
    const { store, runner } = setUp();
    const fault = outage(store, (w) => w.markRunning !== true);
    await expect(runner.runStage('m1', 'stage1')).rejects.toBeInstanceOf(Unavailable);
    expect(fault.refused()).toBeGreaterThan(0);
    expect(store.outcomes.stage1 ?? []).toEqual([]);
  });
});
