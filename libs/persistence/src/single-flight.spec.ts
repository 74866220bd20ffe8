import { KeyedSingleFlight } from './single-flight';
import { sleep } from '../../../test/support/wait';

function gate() {
  let open: () => void = () => undefined;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { open, opened };
}

describe('KeyedSingleFlight', () => {
  it('runs once for a lone call and forgets the key afterwards', async () => {
    const runs: string[] = [];
    const flight = new KeyedSingleFlight(async (key) => {
      runs.push(key);
    });
    await flight.run('a');
    expect(runs).toEqual(['a']);
    expect(flight.size).toBe(0);
  });

  it('folds calls made during a run into exactly one more run, which they wait for', async () => {
    const runs: number[] = [];
    const first = gate();
    const flight = new KeyedSingleFlight(async () => {
      runs.push(runs.length + 1);
      if (runs.length === 1) await first.opened;
    });
    const one = flight.run('batch');
    let laterSettled = 0;
    const later = [flight.run('batch'), flight.run('batch'), flight.run('batch')].map((p) =>
      p.then(() => (laterSettled += 1)),
    );
    await new Promise((resolve) => setImmediate(resolve));
    expect(runs).toEqual([1]);
    expect(laterSettled).toBe(0);
    first.open();
    await Promise.all([one, ...later]);
    expect(runs).toEqual([1, 2]);
    expect(flight.size).toBe(0);
  });

  it('runs different keys side by side', async () => {
    const active = new Set<string>();
    let most = 0;
    const flight = new KeyedSingleFlight(async (key) => {
      active.add(key);
      most = Math.max(most, active.size);
      await sleep(10);
      active.delete(key);
    });
    await Promise.all([flight.run('a'), flight.run('b')]);
    expect(most).toBe(2);
  });

  it('passes a failure to the callers and takes the next call afresh', async () => {
    let fail = true;
    const flight = new KeyedSingleFlight(async () => {
      if (fail) throw new Error('database away');
    });
    await expect(flight.run('a')).rejects.toThrow('database away');
    fail = false;
    await expect(flight.run('a')).resolves.toBeUndefined();
    expect(flight.size).toBe(0);
  });
});
