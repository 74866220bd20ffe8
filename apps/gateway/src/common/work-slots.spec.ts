import { ApiError } from './api-error';
import { WorkSlots } from './work-slots';

const deferred = () => {
  let resolve: () => void = () => undefined;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
};

describe('WorkSlots', () => {
  it('runs one at a time, the others in arrival order', async () => {
    const slots = new WorkSlots(1, 10, 'reports');
    const order: string[] = [];
    const first = deferred();
    const a = slots.run(async () => {
      order.push('a start');
      await first.promise;
      order.push('a end');
    });
    const b = slots.run(async () => void order.push('b'));
    const c = slots.run(async () => void order.push('c'));
    await new Promise((r) => setImmediate(r));
    expect(order).toEqual(['a start']);
    expect(slots.busy).toEqual({ running: 1, waiting: 2 });
    first.resolve();
    await Promise.all([a, b, c]);
    expect(order).toEqual(['a start', 'a end', 'b', 'c']);
    expect(slots.busy).toEqual({ running: 0, waiting: 0 });
  });

  it('passes the slot on when the work fails', async () => {
    const slots = new WorkSlots(1, 10, 'reports');
    const failing = slots.run(async () => {
      throw new Error('boom');
    });
    const next = slots.run(async () => 'next');
    await expect(failing).rejects.toThrow('boom');
    await expect(next).resolves.toBe('next');
    expect(slots.busy).toEqual({ running: 0, waiting: 0 });
  });

  it('refuses with 503 past the queue it allows', async () => {
    const slots = new WorkSlots(1, 1, 'reports');
    const hold = deferred();
    const a = slots.run(() => hold.promise);
    const b = slots.run(async () => undefined);
    const refused = slots.run(async () => undefined);
    await expect(refused).rejects.toBeInstanceOf(ApiError);
    await expect(refused).rejects.toMatchObject({ status: 503 });
    hold.resolve();
    await Promise.all([a, b]);
  });
});
