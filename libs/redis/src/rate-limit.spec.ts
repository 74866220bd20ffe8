import { hashTagOf } from '@conclave/config';
import { rateLimitKeys } from './rate-limit';

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
