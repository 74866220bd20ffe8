import type { DeliveredEvent } from '@conclave/contracts';
import { OrderedDelivery } from './ordered-delivery';

const event = (seq: number, type = 'model_progress'): DeliveredEvent => ({
  type,
  seq,
  messageId: 'm',
  at: new Date(0).toISOString(),
});

function setup(stored: DeliveredEvent[], afterSeq = 0) {
  const sent: number[] = [];
  let ended: string | null = null;
  let fetches = 0;
  let release: (() => void) | null = null;
  let hold = false;
  const delivery = new OrderedDelivery(
    afterSeq,
    async (after) => {
      fetches += 1;
      if (hold) await new Promise<void>((resolve) => (release = resolve));
      return replay(stored, after, false);
    },
    (e) => sent.push(e.seq),
    (reason) => (ended = reason),
  );
  return {
    delivery,
    sent,
    ended: () => ended,
    fetches: () => fetches,
    holdFetch: () => (hold = true),
    releaseFetch: () => {
      hold = false;
      release?.();
    },
  };
}

/** What the store's replayAfter answers: the events after a seq, and whether it has ended. */
const replay = (stored: DeliveredEvent[], after: number, finished: boolean) => ({
  events: stored.filter((e) => e.seq > after),
  finished,
});

const flush = () => new Promise((resolve) => setImmediate(resolve));

describe('OrderedDelivery', () => {
  it('replays stored events after afterSeq, then live ones', async () => {
    const stored = [event(1), event(2), event(3)];
    const t = setup(stored, 1);
    await t.delivery.start();
    stored.push(event(4));
    t.delivery.offer(event(4));
    await flush();
    expect(t.sent).toEqual([2, 3, 4]);
  });

  it('drops live events that arrive during replay and were already replayed', async () => {
    const stored = [event(1), event(2)];
    const t = setup(stored);
    t.holdFetch();
    const started = t.delivery.start();
    await flush();
    stored.push(event(3));
    t.delivery.offer(event(2));
    t.delivery.offer(event(3));
    t.releaseFetch();
    await started;
    await flush();
    expect(t.sent).toEqual([1, 2, 3]);
  });

  it('fills a gap from the store when a live event skips ahead', async () => {
    const stored = [event(1)];
    const t = setup(stored);
    await t.delivery.start();
    stored.push(event(2), event(3));
    t.delivery.offer(event(3)); // the publish of 2 was lost
    await flush();
    await flush();
    expect(t.sent).toEqual([1, 2, 3]);
    expect(t.fetches()).toBe(2);
  });

  it('ignores duplicates', async () => {
    const t = setup([event(1)]);
    await t.delivery.start();
    t.delivery.offer(event(1));
    t.delivery.offer(event(1));
    await flush();
    expect(t.sent).toEqual([1]);
  });

  it('ends after a terminal event and delivers nothing more', async () => {
    const stored = [event(1), event(2, 'complete')];
    const t = setup(stored);
    await t.delivery.start();
    t.delivery.offer(event(3));
    await flush();
    expect(t.sent).toEqual([1, 2]);
    expect(t.ended()).toBe('terminal');
  });

  it('ends a subscriber already past the last event of a finished deliberation', async () => {
    const sent: number[] = [];
    let ended: string | null = null;
    const stored = [event(1), event(2, 'complete')];
    const delivery = new OrderedDelivery(
      2,
      async (after) => replay(stored, after, true),
      (e) => sent.push(e.seq),
      (reason) => (ended = reason),
    );
    await delivery.start();
    expect(sent).toEqual([]);
    expect(ended).toBe('terminal');
  });

  it('keeps a subscriber of a running deliberation open when it has seen everything so far', async () => {
    const delivery = new OrderedDelivery(
      1,
      async () => ({ events: [], finished: false }),
      () => undefined,
      () => undefined,
    );
    await delivery.start();
    expect(delivery.isEnded).toBe(false);
  });

  it('takes whether the deliberation ended from the replay itself', async () => {
    const stored = [event(1), event(2, 'complete')];
    const run = async (afterSeq: number, finished: boolean) => {
      const sent: number[] = [];
      let ended: string | null = null;
      const delivery = new OrderedDelivery(
        afterSeq,
        async (after) => replay(stored, after, finished),
        (e) => sent.push(e.seq),
        (reason) => (ended = reason),
      );
      await delivery.start();
      return { sent, ended };
    };
    // Past the terminal event of an ended deliberation: done without a second question.
    expect(await run(2, true)).toEqual({ sent: [], ended: 'terminal' });
    // The terminal event replayed: done by it.
    expect(await run(0, true)).toEqual({ sent: [1, 2], ended: 'terminal' });
    // Its terminal event ends it whatever the fetch said.
    expect(await run(1, false)).toEqual({ sent: [2], ended: 'terminal' });
    // Still running, everything seen so far: stays open.
    stored.pop();
    expect(await run(1, false)).toEqual({ sent: [], ended: null });
  });

  it('resync fetches events whose publish was lost, without a later live event', async () => {
    const stored = [event(1)];
    const t = setup(stored);
    await t.delivery.start();
    stored.push(event(2), event(3, 'complete'));
    t.delivery.resync();
    await flush();
    await flush();
    expect(t.sent).toEqual([1, 2, 3]);
    expect(t.ended()).toBe('terminal');
  });

  it('ends when the store cannot be read', async () => {
    const delivery = new OrderedDelivery(
      0,
      () => Promise.reject(new Error('db down')),
      () => undefined,
    );
    await delivery.start();
    expect(delivery.isEnded).toBe(true);
  });

  it('stays subscribed while the store is unavailable, and catches up once it is back', async () => {
    const stored = [event(1)];
    let down = false;
    const sent: number[] = [];
    const delivery = new OrderedDelivery(
      0,
      async (after) => {
        if (down)
          throw Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
        return replay(stored, after, false);
      },
      (e) => sent.push(e.seq),
    );
    await delivery.start();
    down = true;
    delivery.resync();
    await flush();
    expect(delivery.isEnded).toBe(false);
    down = false;
    stored.push(event(2), event(3, 'complete'));
    delivery.offer(event(3, 'complete'));
    await flush();
    await flush();
    expect(sent).toEqual([1, 2, 3]);
    expect(delivery.isEnded).toBe(true);
  });
});

describe('OrderedDelivery with a subscriber that reads slowly', () => {
  it('sends the next event only once the subscriber has room for it', async () => {
    const stored = [event(1), event(2), event(3)];
    const sent: number[] = [];
    let release: () => void = () => undefined;
    const delivery = new OrderedDelivery(
      0,
      async (after) => replay(stored, after, false),
      (e) => sent.push(e.seq),
      () => undefined,
      // Full after the first event until released.
      () => (sent.length === 1 ? new Promise<void>((resolve) => (release = resolve)) : null),
    );
    const started = delivery.start();
    await flush();
    delivery.offer(event(4));
    await flush();
    expect(sent).toEqual([1]);
    release();
    await started;
    await flush();
    expect(sent).toEqual([1, 2, 3, 4]);
  });

  it('stops waiting and sends nothing more once closed while waiting', async () => {
    const stored = [event(1), event(2)];
    const sent: number[] = [];
    let release: () => void = () => undefined;
    let ended: string | null = null;
    const delivery = new OrderedDelivery(
      0,
      async (after) => replay(stored, after, false),
      (e) => sent.push(e.seq),
      (reason) => (ended = reason),
      () => new Promise<void>((resolve) => (release = resolve)),
    );
    const started = delivery.start();
    await flush();
    delivery.close();
    release();
    await started;
    expect(sent).toEqual([1]);
    expect(ended).toBe('closed');
  });
});

describe('OrderedDelivery with a first replay of its own (a subscription that checks ownership in it)', () => {
  it('asks the first replay at once, from afterSeq, and sends nothing until the gate opens', async () => {
    const stored = [event(1), event(2), event(3)];
    const t = setup(stored, 1);
    const asked: number[] = [];
    let open: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => (open = resolve));
    void t.delivery.start({
      fetch: async (after) => {
        asked.push(after);
        return replay(stored, after, false);
      },
      gate,
    });
    expect(asked).toEqual([1]);
    expect(await t.delivery.firstReplay).toEqual(replay(stored, 1, false));
    stored.push(event(4));
    t.delivery.offer(event(4));
    await flush();
    expect(t.sent).toEqual([]);
    open();
    await flush();
    // The replay, then the live event that came while the gate was shut; fetchAfter never asked.
    expect(t.sent).toEqual([2, 3, 4]);
    expect(t.fetches()).toBe(0);
  });

  it('a refused first replay (null) sends nothing, live events included, and ends the delivery', async () => {
    const stored = [event(1), event(2)];
    const t = setup(stored);
    void t.delivery.start({ fetch: async () => null, gate: Promise.resolve() });
    t.delivery.offer(event(3));
    expect(await t.delivery.firstReplay).toBeNull();
    await flush();
    expect(t.sent).toEqual([]);
    expect(t.ended()).toBe('failed');
    expect(t.delivery.isEnded).toBe(true);
  });

  it('closed before the gate opens (the caller refused the subscriber) it sends nothing', async () => {
    const stored = [event(1), event(2)];
    const t = setup(stored);
    let open: () => void = () => undefined;
    void t.delivery.start({
      fetch: async (after) => replay(stored, after, false),
      gate: new Promise((r) => (open = r)),
    });
    await t.delivery.firstReplay;
    t.delivery.close();
    open();
    await flush();
    expect(t.sent).toEqual([]);
    expect(t.ended()).toBe('closed');
  });

  it('a first replay that fails (the store away) ends the delivery: no unchecked fetch follows', async () => {
    const stored = [event(1), event(2)];
    const t = setup(stored);
    const unavailable = Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
    void t.delivery.start({ fetch: () => Promise.reject(unavailable), gate: Promise.resolve() });
    await expect(t.delivery.firstReplay).rejects.toBe(unavailable);
    t.delivery.offer(event(3));
    t.delivery.resync();
    await flush();
    expect(t.delivery.isEnded).toBe(true);
    expect(t.ended()).toBe('failed');
    expect(t.fetches()).toBe(0);
    expect(t.sent).toEqual([]);
  });
});
