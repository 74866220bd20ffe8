import { ApiError } from './api-error';
import { RateLimited } from './rate-limiter';
import { WorkSlots, type WorkSlotsLimits } from './work-slots';

const deferred = () => {
  let resolve: () => void = () => undefined;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
};

const limits = (overrides: Partial<WorkSlotsLimits> = {}): WorkSlotsLimits => ({
  slots: 1,
  perOwner: 10,
  total: 100,
  what: 'batch reports',
  perOwnerSetting: 'REPORT_QUEUE_PER_USER',
  totalSetting: 'REPORT_QUEUE_TOTAL',
  ...overrides,
});

const settle = () => new Promise((r) => setImmediate(r));

describe('WorkSlots', () => {
  it("runs one at a time, one owner's work in arrival order", async () => {
    const slots = new WorkSlots(limits());
    const order: string[] = [];
    const first = deferred();
    const a = slots.run('alice', async () => {
      order.push('a start');
      await first.promise;
      order.push('a end');
    });
    const b = slots.run('alice', async () => void order.push('b'));
    const c = slots.run('alice', async () => void order.push('c'));
    await settle();
    expect(order).toEqual(['a start']);
    expect(slots.busy).toEqual({ running: 1, waiting: 2 });
    first.resolve();
    await Promise.all([a, b, c]);
    expect(order).toEqual(['a start', 'a end', 'b', 'c']);
    expect(slots.busy).toEqual({ running: 0, waiting: 0 });
  });

  it("serves the owner served least recently first: one owner's flood does not delay another's work", async () => {
    const slots = new WorkSlots(limits());
    const order: string[] = [];
    const hold = deferred();
    const runs = [slots.run('alice', () => hold.promise.then(() => void order.push('alice 0')))];
    for (let i = 1; i <= 5; i++) runs.push(slots.run('alice', async () => void order.push(`alice ${i}`)));
    runs.push(slots.run('bob', async () => void order.push('bob 0')));
    runs.push(slots.run('bob', async () => void order.push('bob 1')));
    runs.push(slots.run('carol', async () => void order.push('carol 0')));
    await settle();
    expect(slots.waitingOf('alice')).toBe(5);
    hold.resolve();
    await Promise.all(runs);
    // alice's first ran already: bob and carol (in the order they came) go before her next.
    expect(order).toEqual([
      'alice 0',
      'bob 0',
      'carol 0',
      'alice 1',
      'bob 1',
      'alice 2',
      'alice 3',
      'alice 4',
      'alice 5',
    ]);
    expect(slots.busy).toEqual({ running: 0, waiting: 0 });
  });

  it('hands freed slots in turn with more than one slot', async () => {
    const slots = new WorkSlots(limits({ slots: 2 }));
    const order: string[] = [];
    const holds = [deferred(), deferred()];
    const runs = holds.map((h, i) =>
      slots.run('alice', () => h.promise.then(() => void order.push(`alice ${i}`))),
    );
    runs.push(slots.run('alice', async () => void order.push('alice 2')));
    runs.push(slots.run('bob', async () => void order.push('bob 0')));
    await settle();
    expect(slots.busy).toEqual({ running: 2, waiting: 2 });
    holds[0].resolve();
    await settle();
    // The freed slot goes to bob (never served) before alice's third, then to alice's third,
    // while the other slot still holds alice 1.
    expect(order).toEqual(['alice 0', 'bob 0', 'alice 2']);
    expect(slots.busy).toEqual({ running: 1, waiting: 0 });
    holds[1].resolve();
    await Promise.all(runs);
    expect(order).toEqual(['alice 0', 'bob 0', 'alice 2', 'alice 1']);
  });

  it('passes the slot on when the work fails', async () => {
    const slots = new WorkSlots(limits());
    const failing = slots.run('alice', async () => {
      throw new Error('boom');
    });
    const next = slots.run('bob', async () => 'next');
    await expect(failing).rejects.toThrow('boom');
    await expect(next).resolves.toBe('next');
    expect(slots.busy).toEqual({ running: 0, waiting: 0 });
  });

  it("refuses an owner past their own queue with a 429 naming the setting, and still admits others'", async () => {
    const slots = new WorkSlots(limits({ perOwner: 2 }));
    const hold = deferred();
    const admitted = [slots.run('alice', () => hold.promise)];
    admitted.push(
      slots.run('alice', async () => undefined),
      slots.run('alice', async () => undefined),
    );
    const refused = slots.run('alice', async () => undefined);
    await expect(refused).rejects.toBeInstanceOf(RateLimited);
    await expect(refused).rejects.toMatchObject({ status: 429 });
    const error = (await refused.catch((e: unknown) => e)) as RateLimited;
    expect(error.message).toMatch(/at most 2 .*REPORT_QUEUE_PER_USER/);
    expect(error.retryAfterSeconds).toBeGreaterThanOrEqual(1);
    expect(error.retryAfterSeconds).toBeLessThanOrEqual(60);
    admitted.push(slots.run('bob', async () => undefined));
    hold.resolve();
    await Promise.all(admitted);
    expect(slots.busy).toEqual({ running: 0, waiting: 0 });
  });

  it('refuses everyone with a 503 naming the setting past the total queue', async () => {
    const slots = new WorkSlots(limits({ perOwner: 5, total: 2 }));
    const hold = deferred();
    const admitted = [slots.run('alice', () => hold.promise)];
    admitted.push(
      slots.run('alice', async () => undefined),
      slots.run('bob', async () => undefined),
    );
    const refused = slots.run('carol', async () => undefined);
    await expect(refused).rejects.toBeInstanceOf(ApiError);
    await expect(refused).rejects.toMatchObject({ status: 503 });
    await expect(refused).rejects.toThrow(/REPORT_QUEUE_TOTAL/);
    hold.resolve();
    await Promise.all(admitted);
  });
});
