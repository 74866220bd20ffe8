import { modeEvents, TestStack } from './support/harness';

describe('the whole-deliberation cap (DELIBERATION_CAP_MS)', () => {
  const stack = new TestStack({ DELIBERATION_CAP_MS: '3000' });
  beforeAll(() => stack.start(), 60_000);
  afterAll(() => stack.stop());

  it('bounds calls by the time left and stops the deliberation once the cap is reached', async () => {
    const started = Date.now();
    const { messageId, events } = await stack.run({
      question: 'Take your time',
      councilModels: ['sim/a:delay1000@answer:delay20000@rank', 'sim/b:delay1000@answer:delay20000@rank'],
      chairmanModel: 'sim/c',
    });
    expect(Date.now() - started).toBeLessThan(10_000);
    const rankingFailures = events.filter(
      (e) => e.type === 'model_progress' && e.stage === 'stage2' && e.state === 'failed',
    );
    expect(rankingFailures.map((e) => e.error)).toEqual(['timed out', 'timed out']);
    expect(modeEvents(events).map((e) => e.type)).toEqual([
      'stage1_start',
      'stage1_complete',
      'stage2_start',
      'stage2_complete',
      'error',
    ]);
    expect(events.at(-1)?.message).toBe('The deliberation ran past its 3 s limit and was stopped.');
    const view = await stack.api<{ status: string }>('GET', `/api/deliberations/${messageId}`);
    expect(view.body.status).toBe('failed');
  });
});
