import type { DeliveredEvent } from '@conclave/contracts';
import { COUNCIL_SEQUENCE, expectContiguous, modeEvents, TestStack } from './support/harness';

describe('crash safety: a worker SIGKILLed mid-stage', () => {
  const stack = new TestStack({
    WORKER_LOCK_MS: '2000',
    WORKER_STALLED_INTERVAL_MS: '1000',
  });
  beforeAll(() => stack.start({ worker: false }), 60_000);
  afterAll(() => stack.stop());

  it('another worker completes the deliberation: rows once, events without gap or duplicate', async () => {
    const first = await stack.spawnWorker();
    const { messageId } = await stack.deliberate({
      question: 'Survive a crash',
      councilModels: ['sim/slow1:delay4000@answer', 'sim/slow2:delay4000@answer', 'sim/fast'],
      chairmanModel: 'sim/fast',
    });
    const socket = await stack.connect();
    const events: DeliveredEvent[] = [];
    let fastAnswered: () => void = () => undefined;
    const fastDone = new Promise<void>((resolve) => (fastAnswered = resolve));
    const finished = new Promise<void>((resolve) => {
      socket.onAny((name: string, event: DeliveredEvent) => {
        events.push(event);
        if (
          event.type === 'model_progress' &&
          event.participant === 'sim/fast' &&
          event.state === 'succeeded'
        ) {
          fastAnswered();
        }
        if (name === 'complete' || name === 'error') resolve();
      });
    });
    expect(await socket.emitWithAck('subscribe', { messageId })).toEqual({ ok: true });

    await fastDone; // the slow calls are still in flight
    first.kill('SIGKILL');
    await new Promise((resolve) => first.once('exit', resolve));
    const startedBeforeKill = events.filter(
      (e) => e.type === 'model_progress' && e.state === 'started',
    ).length;
    expect(startedBeforeKill).toBe(3);
    expect(events.some((e) => e.type === 'stage1_complete')).toBe(false);

    await stack.spawnWorker();
    await finished;

    expectContiguous(events);
    expect(new Set(events.map((e) => e.seq)).size).toBe(events.length);
    expect(modeEvents(events).map((e) => e.type)).toEqual(COUNCIL_SEQUENCE);
    const stored = await stack.api<{ status: string }>('GET', `/api/deliberations/${messageId}`);
    expect(stored.body.status).toBe('complete');

    const rows = await stack.stageRows(messageId);
    expect(rows.map((r) => `${r.stage_type}:${r.model ?? '-'}`).sort()).toEqual(
      [
        'stage1:sim/fast',
        'stage1:sim/slow1:delay4000@answer',
        'stage1:sim/slow2:delay4000@answer',
        'stage2_label_map:-',
        'stage2:sim/fast',
        'stage2:sim/slow1:delay4000@answer',
        'stage2:sim/slow2:delay4000@answer',
        'stage2_aggregate:-',
        'stage3:sim/fast',
      ].sort(),
    );
    // the fast answer stored before the crash was reused, not asked for again
    const calls: { stage: string; n: number }[] = await stack.db.query(
      `SELECT stage, COUNT(*)::int AS n FROM model_calls WHERE message_id = $1 GROUP BY stage ORDER BY stage`,
      [messageId],
    );
    expect(calls).toEqual([
      { stage: 'stage1', n: 3 },
      { stage: 'stage2', n: 3 },
      { stage: 'stage3', n: 1 },
      { stage: 'title', n: 1 },
    ]);
  }, 90_000);
});

/**
 * The same crash with the default lock and stalled-job settings: the stage is taken over within
 * seconds, and its subscribers are told (`resumed`) instead of hearing nothing meanwhile.
 */
describe('crash recovery with the default settings', () => {
  const stack = new TestStack();
  beforeAll(() => stack.start({ worker: false }), 60_000);
  afterAll(() => stack.stop());

  it('another worker resumes the stage within seconds and subscribers get `resumed`', async () => {
    const first = await stack.spawnWorker();
    const { messageId } = await stack.deliberate({
      question: 'Resume after a crash',
      councilModels: ['sim/slow1:delay9000@answer', 'sim/slow2:delay9000@answer', 'sim/fast'],
      chairmanModel: 'sim/fast',
    });
    const socket = await stack.connect();
    const events: { event: DeliveredEvent; receivedAt: number }[] = [];
    let fastAnswered: () => void = () => undefined;
    const fastDone = new Promise<void>((resolve) => (fastAnswered = resolve));
    const finished = new Promise<void>((resolve) => {
      socket.onAny((name: string, event: DeliveredEvent) => {
        events.push({ event, receivedAt: Date.now() });
        if (
          event.type === 'model_progress' &&
          event.participant === 'sim/fast' &&
          event.state === 'succeeded'
        ) {
          fastAnswered();
        }
        if (name === 'complete' || name === 'error') resolve();
      });
    });
    expect(await socket.emitWithAck('subscribe', { messageId })).toEqual({ ok: true });
    await fastDone; // the slow calls are in flight for 9 s more
    // The worker that takes over is up before the crash, as in a fleet.
    await stack.spawnWorker();
    first.kill('SIGKILL');
    await new Promise((resolve) => first.once('exit', resolve));
    const killedAt = Date.now();
    const before = events.length;

    await finished;
    const after = events.slice(before).map((e) => e.event);
    // The first thing said after the crash is that the stage is being resumed, and why.
    expect(after[0]).toMatchObject({ type: 'resumed', stage: 'stage1', reason: 'worker_lost' });
    expect(String(after[0].message)).toMatch(/resum/i);
    const resumedAfterMs = events[before].receivedAt - killedAt;
    // Generous on a loaded machine; the benchmark gives the real figure (about 5–8 s).
    expect(resumedAfterMs).toBeLessThan(20_000);

    const all = events.map((e) => e.event);
    expectContiguous(all);
    expect(all.filter((e) => e.type === 'resumed')).toHaveLength(1);
    // The mode's own sequence is unchanged around the extension event.
    expect(modeEvents(all).map((e) => e.type)).toEqual(COUNCIL_SEQUENCE);
    const stored = await stack.api<{ status: string }>('GET', `/api/deliberations/${messageId}`);
    expect(stored.body.status).toBe('complete');
    const calls: { stage: string; n: number }[] = await stack.db.query(
      `SELECT stage, COUNT(*)::int AS n FROM model_calls WHERE message_id = $1 GROUP BY stage ORDER BY stage`,
      [messageId],
    );
    expect(calls).toEqual([
      { stage: 'stage1', n: 3 },
      { stage: 'stage2', n: 3 },
      { stage: 'stage3', n: 1 },
      { stage: 'title', n: 1 },
    ]);
  }, 120_000);
});
