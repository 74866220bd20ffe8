import fc from 'fast-check';
import { fnv1a32, SeededRandom, seedToUint32 } from './random';

const RUNS = Number(process.env.CONCLAVE_PROPERTY_RUNS) || 200;

describe('fnv1a32', () => {
  it('matches the published FNV-1a 32-bit test vectors', () => {
    expect(fnv1a32('')).toBe(0x811c9dc5);
    expect(fnv1a32('a')).toBe(0xe40c292c);
    expect(fnv1a32('foobar')).toBe(0xbf9cf968);
  });

  it('hashes the UTF-8 bytes (value from the reference C code over the same bytes)', () => {
    expect(fnv1a32('h\u00e9llo \u{1f600}')).toBe(30308141);
  });
});

describe('SeededRandom (mulberry32)', () => {
  const first = (seed: number | string, n = 5): number[] => {
    const rng = new SeededRandom(seed);
    return Array.from({ length: n }, () => rng.nextUint32());
  };

  it('is bit-identical to the reference C implementation', () => {
    // Outputs of Tommy Ettinger's mulberry32 in C, compiled and run for these seeds.
    expect(first(0)).toEqual([1144304738, 1416247, 958946056, 627933444, 2007157716]);
    expect(first(1)).toEqual([2693262067, 11749833, 2265367787, 4213581821, 4159151403]);
    expect(seedToUint32('conclave')).toBe(3903057682);
    expect(first('conclave')).toEqual([150548909, 3081097186, 3765537398, 561811443, 500385415]);
  });

  it('takes integer seeds modulo 2^32 and hashes other seeds', () => {
    expect(seedToUint32(-1)).toBe(4294967295);
    expect(seedToUint32(2 ** 32 + 1)).toBe(1);
    expect(seedToUint32(1.5)).toBe(fnv1a32('1.5'));
  });

  it('gives the same stream for the same seed, and nextInt stays in range', () => {
    fc.assert(
      fc.property(fc.oneof(fc.integer(), fc.string()), fc.integer({ min: 1, max: 100_000 }), (seed, n) => {
        const a = new SeededRandom(seed);
        const b = new SeededRandom(seed);
        for (let i = 0; i < 20; i++) {
          const x = a.nextInt(n);
          expect(b.nextInt(n)).toBe(x);
          expect(Number.isInteger(x) && x >= 0 && x < n).toBe(true);
          const u = a.next();
          b.next();
          expect(u >= 0 && u < 1).toBe(true);
        }
      }),
      { numRuns: RUNS },
    );
  });

  it('fillInts gives exactly the numbers nextInt would', () => {
    fc.assert(
      fc.property(fc.integer(), fc.integer({ min: 1, max: 2 ** 32 }), fc.nat(50), (seed, n, length) => {
        const one = new SeededRandom(seed);
        const bulk = new SeededRandom(seed);
        const target = new Uint32Array(length);
        bulk.fillInts(target, n);
        expect(Array.from(target)).toEqual(Array.from({ length }, () => one.nextInt(n)));
        expect(bulk.nextUint32()).toBe(one.nextUint32());
      }),
      { numRuns: RUNS },
    );
  });

  it('spreads draws evenly (chi-square over 10 cells, 100 000 draws)', () => {
    const rng = new SeededRandom('uniformity');
    const cells = new Array<number>(10).fill(0);
    const draws = 100_000;
    for (let i = 0; i < draws; i++) cells[rng.nextInt(10)]++;
    const expected = draws / 10;
    const chi2 = cells.reduce((sum, c) => sum + (c - expected) ** 2 / expected, 0);
    // 9 degrees of freedom: P(χ² > 27.88) = 0.001.
    expect(chi2).toBeLessThan(27.88);
  });

  it('rejects a non-integer or empty range', () => {
    const rng = new SeededRandom(1);
    expect(() => rng.nextInt(0)).toThrow(RangeError);
    expect(() => rng.nextInt(2.5)).toThrow(RangeError);
  });
});
