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
