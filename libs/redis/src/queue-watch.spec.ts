import { leasedCallsOf } from './queue-watch';

describe('leasedCallsOf', () => {
  it("reads a deliberation's calls from a lease, skipping others and malformed entries", () => {
    const raw = JSON.stringify({
      at: 5000,
      running: ['m1:stage1'],
      calls: [
        ['m1', 'stage1', 'a', 'local/a', 4000],
        ['m2', 'stage1', 'a', 'local/a', 4100],
        ['m1', 'stage1', 'b', 7, 4200],
        'junk',
        ['m1', 'title', 'title', 'local/t', 4300],
      ],
    });
    expect(leasedCallsOf(raw, 'm1')).toEqual({
      at: 5000,
      calls: [
        { messageId: 'm1', stage: 'stage1', key: 'a', model: 'local/a', startedAt: 4000 },
        { messageId: 'm1', stage: 'title', key: 'title', model: 'local/t', startedAt: 4300 },
      ],
    });
  });

  it('has nothing for leases of older workers (no calls) or that are not JSON', () => {
    expect(leasedCallsOf(JSON.stringify({ at: 1, running: [] }), 'm1')).toBeNull();
    expect(leasedCallsOf('{', 'm1')).toBeNull();
    expect(leasedCallsOf('null', 'm1')).toBeNull();
  });
});
