import type { LiveCallId, ModelDeltaPayload, ModelPartialPayload } from '@conclave/contracts';
import { DeliberationStopped, LiveCalls, STOPPED_MEMORY_MS, type LiveChannel } from './live-calls';
import type { PlannedCall } from './types';
import { sleep } from '../../../../test/support/wait';

type Delta = ModelDeltaPayload & LiveCallId;
type Partial = ModelPartialPayload & LiveCallId;

class RecordingChannel implements LiveChannel {
  deltas: { messageId: string; deltas: Delta[] }[] = [];
  partials: { messageId: string; replyTo: string; partials: Partial[] }[] = [];
  listening = true;

  async sendDeltas(messageId: string, deltas: Delta[]): Promise<boolean> {
    this.deltas.push({ messageId, deltas });
    return this.listening;
  }

  async sendPartials(messageId: string, replyTo: string, partials: Partial[]): Promise<void> {
    this.partials.push({ messageId, replyTo, partials });
  }
}

const call = (key: string, participant: string | number, model = `sim/${key}`): PlannedCall => ({
  key,
  participant,
  model,
  messages: [],
});

const tick = (ms: number) => sleep(ms);

describe('LiveCalls', () => {
  it('sends nothing while nobody watches, however much is written', async () => {
    const channel = new RecordingChannel();
    const live = new LiveCalls(channel, undefined, 5);
    const a = live.begin('m1', 'stage1', call('a', 'sim/a'));
    for (let i = 0; i < 50; i++) a.onDelta('x');
    await tick(20);
    a.end();
    await tick(20);
    expect(channel.deltas).toEqual([]);
    expect(channel.partials).toEqual([]);
  });

  it('a watch that comes before the calls start here covers the calls that begin soon after', async () => {
    const channel = new RecordingChannel();
    const live = new LiveCalls(channel, undefined, 5);
    // The stage was opened by the previous one's commit: the watch beats its calls to this worker.
    live.watch('m1', 'gw1:w1');
    expect(channel.partials).toEqual([]);
    const a = live.begin('m1', 'stage2', call('a', 'sim/a'));
    a.onDelta('Hel');
    a.onDelta('lo');
    await tick(20);
    expect(channel.deltas).toEqual([
      {
        messageId: 'm1',
        deltas: [
          {
            call: 'stage2:a',
            stage: 'stage2',
            participant: 'sim/a',
            model: 'sim/a',
            text: 'Hello',
            offset: 0,
          },
        ],
      },
    ]);
    a.end();
    // Once its calls have ended, the deliberation is not watched here until the next watch.
    const b = live.begin('m1', 'stage3', call('b', 'sim/b'));
    b.onDelta('x');
    await tick(20);
    expect(channel.deltas).toHaveLength(1);
    b.end();
  });

  it('answers a watch with the text so far, then sends what follows as coalesced deltas at their offsets', async () => {
    const channel = new RecordingChannel();
    const live = new LiveCalls(channel, undefined, 10);
    const a = live.begin('m1', 'stage1', call('a', 'sim/a'));
    const b = live.begin('m1', 'stage1', call('b', 'sim/b'));
    a.onDelta('Hel');
    live.watch('m1', 'gw1:w1');
    expect(channel.partials).toEqual([
      {
        messageId: 'm1',
        replyTo: 'gw1:w1',
        partials: [
          { call: 'stage1:a', stage: 'stage1', participant: 'sim/a', model: 'sim/a', text: 'Hel' },
          { call: 'stage1:b', stage: 'stage1', participant: 'sim/b', model: 'sim/b', text: '' },
        ],
      },
    ]);
    a.onDelta('lo');
    a.onDelta(' world');
    b.onDelta('Hi');
    await tick(30);
    // one publish for the whole deliberation per interval, each call's new text at its offset
    expect(channel.deltas).toEqual([
      {
        messageId: 'm1',
        deltas: [
          {
            call: 'stage1:a',
            stage: 'stage1',
            participant: 'sim/a',
            model: 'sim/a',
            text: 'lo world',
            offset: 3,
          },
          { call: 'stage1:b', stage: 'stage1', participant: 'sim/b', model: 'sim/b', text: 'Hi', offset: 0 },
        ],
      },
    ]);
    a.onDelta('!');
    a.end();
    // what is pending goes out as the call ends, without waiting for the interval
    expect(channel.deltas.at(-1)?.deltas).toEqual([
      expect.objectContaining({ call: 'stage1:a', text: '!', offset: 11 }),
    ]);
    b.end();
    expect(live.size).toBe(0);
  });

  it('sends no more than one message per interval however often a call writes', async () => {
    const channel = new RecordingChannel();
    const live = new LiveCalls(channel, undefined, 40);
    const a = live.begin('m1', 'stage1', call('a', 'sim/a'));
    live.watch('m1', 'r');
    const started = Date.now();
    while (Date.now() - started < 200) {
      a.onDelta('t');
      await tick(1);
    }
    a.end();
    // 200 ms at one message per 40 ms: about 5, plus the final flush
    expect(channel.deltas.length).toBeLessThanOrEqual(7);
    expect(channel.deltas.flatMap((d) => d.deltas.map((x) => x.text)).join('')).toHaveLength(
      channel.deltas.flatMap((d) => d.deltas).reduce((n, d) => n + d.text.length, 0),
    );
    const texts = channel.deltas.flatMap((d) => d.deltas);
    texts.forEach((d, i) => {
      if (i > 0) expect(d.offset).toBe(texts[i - 1].offset + texts[i - 1].text.length);
    });
  });

  it('a second watch sends what is pending as deltas before the partials, so earlier watchers miss nothing', async () => {
    const channel = new RecordingChannel();
    const order: string[] = [];
    const sendDeltas = channel.sendDeltas.bind(channel);
    const sendPartials = channel.sendPartials.bind(channel);
    channel.sendDeltas = (id, deltas) => {
      order.push('deltas');
      return sendDeltas(id, deltas);
    };
    channel.sendPartials = (id, replyTo, partials) => {
      order.push('partials');
      return sendPartials(id, replyTo, partials);
    };
    const live = new LiveCalls(channel, undefined, 1000);
    const a = live.begin('m1', 'stage1', call('a', 'sim/a'));
    live.watch('m1', 'first');
    a.onDelta('abc');
    live.watch('m1', 'second');
    expect(order).toEqual(['partials', 'deltas', 'partials']);
    expect(channel.deltas[0].deltas[0]).toMatchObject({ text: 'abc', offset: 0 });
    expect(channel.partials[1].partials[0].text).toBe('abc');
    a.end();
  });

  it('hides the model of an anonymous participant', () => {
    const channel = new RecordingChannel();
    const live = new LiveCalls(channel);
    live.begin('m1', 'round_1', call('p0', 1, 'sim/secret'));
    live.watch('m1', 'r');
    expect(channel.partials[0].partials[0]).toMatchObject({ participant: 1, model: null });
    expect(JSON.stringify(channel.partials)).not.toContain('secret');
  });

  it('stops sending when the channel says nobody listens, until the next watch', async () => {
    const channel = new RecordingChannel();
    const live = new LiveCalls(channel, undefined, 5);
    const a = live.begin('m1', 'stage1', call('a', 'sim/a'));
    live.watch('m1', 'r');
    channel.listening = false;
    a.onDelta('one');
    await tick(20);
    expect(channel.deltas).toHaveLength(1);
    a.onDelta('two');
    await tick(20);
    expect(channel.deltas).toHaveLength(1);
    channel.listening = true;
    live.watch('m1', 'r2');
    // the new watcher gets everything so far in its partial, then deltas again
    expect(channel.partials.at(-1)?.partials[0].text).toBe('onetwo');
    a.onDelta('three');
    await tick(20);
    expect(channel.deltas.at(-1)?.deltas[0]).toMatchObject({ text: 'three', offset: 6 });
  });

  it('a watch that races a publish nobody heard keeps the deliberation watched', async () => {
    let release: (heard: boolean) => void = () => undefined;
    const channel = new RecordingChannel();
    channel.sendDeltas = (messageId, deltas) => {
      channel.deltas.push({ messageId, deltas });
      return new Promise<boolean>((resolve) => (release = resolve));
    };
    const live = new LiveCalls(channel, undefined, 5);
    const a = live.begin('m1', 'stage1', call('a', 'sim/a'));
    live.watch('m1', 'r1');
    a.onDelta('x');
    await tick(20);
    live.watch('m1', 'r2');
    release(false);
    await tick(1);
    a.onDelta('y');
    await tick(20);
    expect(channel.deltas).toHaveLength(2);
  });

  it('aborts every call of a stopped deliberation, and only those', () => {
    const live = new LiveCalls(null);
    const a = live.begin('m1', 'stage1', call('a', 'sim/a'));
    const b = live.begin('m1', 'stage1', call('b', 'sim/b'));
    const other = live.begin('m2', 'stage1', call('a', 'sim/a'));
    expect(live.stop('m1', 'cancelled: the deliberation was stopped')).toBe(2);
    expect(a.signal.aborted && b.signal.aborted).toBe(true);
    expect(a.signal.reason).toBeInstanceOf(DeliberationStopped);
    expect((a.signal.reason as DeliberationStopped).reason).toBe('cancelled: the deliberation was stopped');
    expect(other.signal.aborted).toBe(false);
    expect(live.stop('m3', 'x')).toBe(0);
  });

  it('a call that begins after its deliberation was stopped starts aborted, for a while', () => {
    const now = jest.spyOn(Date, 'now');
    try {
      now.mockReturnValue(1_000_000);
      const live = new LiveCalls(null);
      // Stopped between a seat's failed model and its next fallback: nothing was running.
      expect(live.stop('m1', 'cancelled: the deliberation was stopped')).toBe(0);
      const late = live.begin('m1', 'stage3', call('c', 'sim/c'));
      expect(late.signal.aborted).toBe(true);
      expect((late.signal.reason as DeliberationStopped).reason).toBe(
        'cancelled: the deliberation was stopped',
      );
      late.end();
      expect(live.begin('m2', 'stage3', call('c', 'sim/c')).signal.aborted).toBe(false);
      // The memory is bounded in time.
      now.mockReturnValue(1_000_000 + STOPPED_MEMORY_MS + 1);
      expect(live.begin('m1', 'stage3', call('d', 'sim/d')).signal.aborted).toBe(false);
    } finally {
      now.mockRestore();
    }
  });
});

describe('LiveCalls: calls in flight, for the heartbeat', () => {
  it('lists every tracked call (with its model, even in anonymous modes) until it settles', () => {
    const live = new LiveCalls(null);
    let told = 0;
    live.onTracked(() => (told += 1));
    const endA = live.track('m1', 'stage1', call('a', 1, 'local/a'));
    const endT = live.track('m1', 'title', call('t', 'local/t', 'local/t'));
    expect(told).toBe(2);
    expect(live.inFlightCalls()).toEqual([
      { messageId: 'm1', stage: 'stage1', key: 'a', model: 'local/a', startedAt: expect.any(Number) },
      { messageId: 'm1', stage: 'title', key: 't', model: 'local/t', startedAt: expect.any(Number) },
    ]);
    endA();
    expect(live.inFlightCalls().map((c) => c.key)).toEqual(['t']);
    endT();
    endT();
    expect(live.inFlightCalls()).toEqual([]);
  });
});
