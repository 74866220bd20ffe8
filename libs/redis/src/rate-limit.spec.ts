import { hashTagOf } from '@conclave/config';
import { MemorySlidingLog, rateLimitKeys } from './rate-limit';

describe('rate limit keys', () => {
  it('are what they always were on one Redis', () => {
    expect(rateLimitKeys('conclave', 'requests', 'user-1')).toEqual([
      'conclave:ratelimit:{requests:user-1}:log',
      'conclave:ratelimit:{requests:user-1}:total',
    ]);
  });

  it("share one hash slot per subject (the sliding log's script names both), spread across subjects", () => {
    for (const prefix of ['conclave', 'team-a:prod', '{conclave}']) {
      for (const subject of ['user-1', '203.0.113.7', '2001:db8:1:2::/64']) {
        const keys = rateLimitKeys(prefix, 'auth-failures', subject);
        expect(new Set(keys.map(hashTagOf)).size).toBe(1);
      }
      const tags = new Set(
        ['a', 'b', 'c'].map((subject) => hashTagOf(rateLimitKeys(prefix, 'requests', subject)[0])),
      );
      expect(tags.size).toBe(prefix.includes('{') ? 1 : 3);
    }
  });
});

describe('the sliding log in memory (when Redis cannot count)', () => {
  const window = { name: 'requests', limit: 3, windowMs: 1000 };

  it('admits up to the limit in any window, says when the cost fits again, and forgets the oldest subjects', () => {
    const log = new MemorySlidingLog(2);
    expect(log.check('a', window, 2, false, 0)).toEqual({ admitted: true, used: 2, waitMs: 0 });
    expect(log.check('a', window, 1, false, 400)).toEqual({ admitted: true, used: 3, waitMs: 0 });
    // Full: the first admission (2 at t=0) must leave the window before 2 more fit.
    expect(log.check('a', window, 2, false, 500)).toEqual({ admitted: false, used: 3, waitMs: 500 });
    // Asking (cost 0) counts nothing; forcing counts over the limit.
    expect(log.check('a', window, 0, false, 500)).toMatchObject({ admitted: false, used: 3 });
    expect(log.check('a', window, 1, true, 500)).toEqual({ admitted: true, used: 4, waitMs: 0 });
    expect(log.check('a', window, 1, false, 1000)).toEqual({ admitted: true, used: 3, waitMs: 0 });
    // Two subjects at most: a third forgets the least recently used.
    log.check('b', window, 3, false, 1000);
    log.check('c', window, 3, false, 1000);
    expect(log.check('a', window, 3, false, 1000)).toEqual({ admitted: true, used: 3, waitMs: 0 });
  });
});
