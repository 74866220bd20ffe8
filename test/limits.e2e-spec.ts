import { COUNCIL_SEQUENCE, modeEvents, TestStack } from './support/harness';

describe('the whole-deliberation cap (DELIBERATION_CAP_MS)', () => {
  const stack = new TestStack({ DELIBERATION_CAP_MS: '1000' });
  beforeAll(() => stack.start(), 60_000);
  afterAll(() => stack.stop());

  it('does not stop a council deliberation, whose stages are sequential (01-council.md §F)', async () => {
    const started = Date.now();
    const { events } = await stack.run({
      question: 'Take your time',
      councilModels: ['sim/a:delay800@answer:delay800@rank', 'sim/b:delay800@answer:delay800@rank'],
      chairmanModel: 'sim/c',
    });
    expect(Date.now() - started).toBeGreaterThan(1000);
    expect(modeEvents(events).map((e) => e.type)).toEqual(COUNCIL_SEQUENCE);
    expect(events.filter((e) => e.type === 'model_progress' && e.state === 'failed')).toEqual([]);
  });
});
