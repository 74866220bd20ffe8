import { ReportCache } from './report-cache';

describe('ReportCache', () => {
  it('keeps answers within its bytes, dropping the least recently used first', () => {
    const cache = new ReportCache(40); // 20 UTF-16 units
    cache.set('a', '"aaaa"'); // 12 bytes
    cache.set('b', '"bbbb"');
    cache.set('c', '"cccc"');
    expect(cache.size).toEqual({ entries: 3, bytes: 36 });
    expect(cache.get('a')).toBe('"aaaa"'); // a is now the most recent
    cache.set('d', '"dddd"');
    expect(cache.get('b')).toBeUndefined();
    expect(cache.get('a')).toBe('"aaaa"');
    expect(cache.get('c')).toBe('"cccc"');
    expect(cache.get('d')).toBe('"dddd"');
    expect(cache.size.bytes).toBeLessThanOrEqual(40);
  });

  it('replaces an entry under the same key and keeps nothing larger than its whole budget', () => {
    const cache = new ReportCache(40);
    cache.set('a', '"aaaa"');
    cache.set('a', '"aa"');
    expect(cache.size).toEqual({ entries: 1, bytes: 8 });
    cache.set('huge', '"' + 'x'.repeat(30) + '"');
    expect(cache.get('huge')).toBeUndefined();
    expect(cache.get('a')).toBe('"aa"');
    const none = new ReportCache(0);
    none.set('a', '1');
    expect(none.get('a')).toBeUndefined();
  });
});
