import { COUNCIL_SEQUENCE, modeEvents, TestStack } from './support/harness';
import { sleep } from './support/wait';

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

  it('stops a jury deliberation at the cap the way a stop does: calls in flight aborted, partial kept (00-shared.md §2)', async () => {
    const started = Date.now();
    const { messageId, events } = await stack.run({
      question: 'Evaluate slowly',
      mode: 'jury',
      modeConfig: {
        content: 'Some content to judge.',
        jurorModels: [
          'sim/a:delay300@evaluation',
          'sim/b:delay300@evaluation',
          'sim/c:delay20000@evaluation',
        ],
        foremanModel: 'sim/f',
      },
    });
    expect(Date.now() - started).toBeLessThan(8000);
    // The two jurors that answered before the cap stay; the stage was never committed.
    expect(modeEvents(events).map((e) => e.type)).toEqual([
      'jury_start',
      'present_start',
      'present_complete',
      'deliberation_start',
      'juror_complete',
      'juror_complete',
      'error',
    ]);
    expect(events.at(-1)?.message).toBe('The deliberation ran past its 1 s limit and was stopped.');
    // The slow juror's call was aborted at the cap (not left to its 20 s delay) and is recorded
    // once it settles, a moment after the error event.
    type View = { status: string; calls: { model: string; ok: boolean; error: string | null }[] };
    const slowCall = async () => {
      const { body } = await stack.api<View>('GET', `/api/deliberations/${messageId}`);
      return { status: body.status, call: body.calls.find((c) => c.model === 'sim/c:delay20000@evaluation') };
    };
    let seen = await slowCall();
    for (let i = 0; i < 50 && !seen.call; i++) {
      await sleep(100);
      seen = await slowCall();
    }
    expect(seen.status).toBe('failed');
    expect(seen.call).toEqual(
      expect.objectContaining({ ok: false, error: 'stopped: the deliberation ended' }),
    );
  });

  it('lets a Delphi round finish at the cap, skips the remaining rounds and still writes the report', async () => {
    const { events } = await stack.run({
      question: 'How many software engineers will be employed globally by 2030?',
      mode: 'delphi',
      modeConfig: {
        panelistModels: [
          'sim/a:delay1200@estimate',
          'sim/b:delay1200@estimate',
          'sim/c:delay1200@estimate:stubborn',
        ],
        facilitatorModel: 'sim/f',
        questionType: 'numeric',
      },
    });
    const types = modeEvents(events).map((e) => e.type);
    expect(types).toEqual([
      'delphi_start',
      'classify_complete',
      'round_start',
      'round_complete',
      'max_rounds_reached',
      'synthesis_start',
      'synthesis_complete',
      'title_complete',
      'complete',
    ]);
    // the round that was running when the cap passed completed with every panelist
    expect(
      events.filter((e) => e.type === 'model_progress' && e.state === 'succeeded' && e.stage === 'round_1'),
    ).toHaveLength(3);
    expect(events.find((e) => e.type === 'max_rounds_reached')).toMatchObject({ round: 1 });
  });
});
