import { Coalescer } from './coalescer';

const tick = () => new Promise((resolve) => setImmediate(resolve));

describe('Coalescer', () => {
  it('flushes items submitted in the same turn together, in order', async () => {
    const flushes: number[][] = [];
    const coalescer = new Coalescer<number, string>(async (items) => {
      flushes.push(items);
      return items.map((i) => `r${i}`);
    });
    const results = await Promise.all([1, 2, 3].map((i) => coalescer.submit(i)));
    expect(results).toEqual(['r1', 'r2', 'r3']);
    expect(flushes).toEqual([[1, 2, 3]]);
  });

  it('collects what arrives during a flush into the next one', async () => {
    const flushes: number[][] = [];
    let release: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const coalescer = new Coalescer<number, number>(async (items) => {
      flushes.push(items);
      if (flushes.length === 1) await gate;
      return items.map((i) => i * 10);
    });
    const first = coalescer.submit(1);
    await tick();
    const later = [coalescer.submit(2), coalescer.submit(3)];
    release();
    expect(await Promise.all([first, ...later])).toEqual([10, 20, 30]);
    expect(flushes).toEqual([[1], [2, 3]]);
  });

  it('rejects every item of a failed flush and keeps working afterwards', async () => {
    let fail = true;
    const coalescer = new Coalescer<number, number>(async (items) => {
      if (fail) throw new Error('database away');
      return items;
    });
    const failed = [coalescer.submit(1), coalescer.submit(2)].map((p) => p.catch((e: Error) => e.message));
    expect(await Promise.all(failed)).toEqual(['database away', 'database away']);
    fail = false;
    expect(await coalescer.submit(3)).toBe(3);
  });

  it('refuses a flush that answers for the wrong number of items', async () => {
    const coalescer = new Coalescer<number, number>(async () => [1]);
    const results = [coalescer.submit(1), coalescer.submit(2)].map((p) => p.catch((e: Error) => e.message));
    expect(await Promise.all(results)).toEqual([
      'flush returned 1 results for 2 items',
      'flush returned 1 results for 2 items',
    ]);
  });
});
