import fc from 'fast-check';
import { proportion, WinCounter, wilsonInterval } from './proportion';

const RUNS = Number(process.env.CONCLAVE_PROPERTY_RUNS) || 200;

describe('wilsonInterval', () => {
  // Newcombe (1998), Statistics in Medicine 17:857–872, Table I, method 3 (score, no continuity
  // correction).
  it.each([
    [81, 263, 0.2553, 0.3662],
    [15, 148, 0.0624, 0.1605],
    [0, 20, 0, 0.1611],
    [1, 29, 0.0061, 0.1718],
  ])('%p/%p → %p–%p as published by Newcombe', (x, n, lower, upper) => {
    const interval = wilsonInterval(x, n);
    expect(interval?.lower).toBeCloseTo(lower, 4);
    expect(interval?.upper).toBeCloseTo(upper, 4);
    expect(interval?.method).toBe('wilson-score');
  });

  it('contains the observed rate and stays inside [0, 1]', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 100_000 }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        fc.constantFrom(0.8, 0.9, 0.95, 0.99),
        (n, f, confidence) => {
          const x = Math.round(f * n);
          const interval = wilsonInterval(x, n, confidence);
          expect(interval).not.toBeNull();
          if (interval === null) return;
          expect(interval.lower).toBeGreaterThanOrEqual(0);
          expect(interval.upper).toBeLessThanOrEqual(1);
          expect(interval.lower).toBeLessThanOrEqual(x / n + 1e-12);
          expect(interval.upper).toBeGreaterThanOrEqual(x / n - 1e-12);
        },
      ),
      { numRuns: RUNS },
    );
  });

  it('is null with no trials and rejects impossible counts', () => {
    expect(wilsonInterval(0, 0)).toBeNull();
    expect(proportion(0, 0)).toMatchObject({ value: null, reason: 'no trials', interval: null });
    expect(() => wilsonInterval(3, 2)).toThrow(RangeError);
  });
});

describe('WinCounter', () => {
  it('separates outright wins from shared first places', () => {
    const wins = new WinCounter();
    wins.addContest(['a', 'b', 'c'], ['a']);
    wins.addContest(['a', 'b', 'c'], ['a', 'b']);
    wins.addContest(['a', 'b', 'c'], []);
    wins.addContest(['b', 'c'], ['c']);
    const summary = wins.result();
    expect(summary).toMatchObject({ contests: 4, ties: 1, undecided: 1 });
    const byName = Object.fromEntries(summary.participants.map((p) => [p.participant, p]));
    expect(byName.a).toMatchObject({ contests: 3, outrightWins: 1, tiedWins: 1 });
    expect(byName.a.winRate.value).toBeCloseTo(1 / 3, 12);
    expect(byName.a.winShare.value).toBeCloseTo(1.5 / 3, 12);
    expect(byName.b.winShare.value).toBeCloseTo(0.5 / 4, 12);
    expect(byName.c).toMatchObject({ contests: 4, outrightWins: 1, tiedWins: 0 });
    expect(summary.participants.map((p) => p.participant)).toEqual(['a', 'c', 'b']);
  });

  it('hands out exactly one win per decided contest', () => {
    const names = ['m1', 'm2', 'm3', 'm4'];
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.subarray(names, { minLength: 1 }), fc.subarray(names)), { maxLength: 30 }),
        (contests) => {
          const wins = new WinCounter();
          for (const [participants, winners] of contests) wins.addContest(participants, winners);
          const summary = wins.result();
          const shares = summary.participants.reduce(
            (sum, p) => sum + (p.winShare.value ?? 0) * p.contests,
            0,
          );
          expect(shares).toBeCloseTo(contests.length - summary.undecided, 9);
        },
      ),
      { numRuns: RUNS },
    );
  });
});
