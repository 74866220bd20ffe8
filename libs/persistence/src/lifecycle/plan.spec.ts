import {
  boundLiteral,
  missingPartitions,
  partitionName,
  partitionsAhead,
  partitionsPastCutoff,
  retentionCutoff,
  weekPartition,
  weekStart,
  type ExistingPartition,
} from './plan';

const at = (iso: string) => new Date(iso);

describe('weekly event partitions', () => {
  it.each([
    ['2026-11-23T00:00:00.000Z', '2026-11-23T00:00:00.000Z'], // a Monday at midnight is its own start
    ['2026-11-24T13:45:00.000Z', '2026-11-23T00:00:00.000Z'],
    ['2026-11-29T23:59:59.999Z', '2026-11-23T00:00:00.000Z'], // Sunday night, still that week
    ['2026-11-30T00:00:00.000Z', '2026-11-30T00:00:00.000Z'],
    ['2027-01-01T08:00:00.000Z', '2026-12-28T00:00:00.000Z'], // across a year end
    ['2024-03-01T12:00:00+14:00', '2024-02-26T00:00:00.000Z'], // the instant counts, in UTC
  ])('%s falls in the week starting %s (Monday 00:00 UTC)', (instant, monday) => {
    expect(weekStart(at(instant)).toISOString()).toBe(monday);
  });

  it('names a week after its Monday and spans exactly seven days', () => {
    const week = weekPartition(at('2026-11-26T10:00:00Z'));
    expect(week).toEqual({
      name: 'deliberation_events_w20261123',
      from: at('2026-11-23T00:00:00Z'),
      to: at('2026-11-30T00:00:00Z'),
    });
    expect(partitionName(at('2027-01-04T00:00:00Z'))).toBe('deliberation_events_w20270104');
  });

  it('wants this week and the four after it, contiguous', () => {
    const ahead = partitionsAhead(at('2026-11-24T09:00:00Z'));
    expect(ahead.map((p) => p.name)).toEqual([
      'deliberation_events_w20261123',
      'deliberation_events_w20261130',
      'deliberation_events_w20261207',
      'deliberation_events_w20261214',
      'deliberation_events_w20261221',
    ]);
    for (let i = 1; i < ahead.length; i++) expect(ahead[i].from).toEqual(ahead[i - 1].to);
    expect(partitionsAhead(at('2026-11-24T09:00:00Z'), 0)).toHaveLength(1);
  });

  it('creates only what no existing partition covers, even in part, and never the default', () => {
    const wanted = partitionsAhead(at('2026-11-24T09:00:00Z'), 3);
    const existing: ExistingPartition[] = [
      { name: 'deliberation_events_default', from: null, to: null },
      weekPartition(at('2026-11-24T00:00:00Z')),
      // An operator's monthly partition overlapping the third week: left alone.
      { name: 'events_december', from: at('2026-12-10T00:00:00Z'), to: at('2026-12-11T00:00:00Z') },
    ];
    expect(missingPartitions(existing, wanted).map((p) => p.name)).toEqual([
      'deliberation_events_w20261130',
      'deliberation_events_w20261214',
    ]);
    expect(missingPartitions([...existing, ...wanted], wanted)).toEqual([]);
  });

  it('writes bounds as ISO literals and refuses an invalid date', () => {
    expect(boundLiteral(at('2026-11-23T00:00:00Z'))).toBe("'2026-11-23T00:00:00.000Z'");
    expect(() => boundLiteral(new Date(NaN))).toThrow(RangeError);
  });
});

describe('retention cutoff', () => {
  const now = at('2026-11-24T12:00:00Z');

  it('is off without RETENTION_DAYS', () => {
    expect(retentionCutoff(now, null)).toBeNull();
  });

  it('is that many whole days before now, to the millisecond', () => {
    expect(retentionCutoff(now, 1)).toEqual(at('2026-11-23T12:00:00Z'));
    expect(retentionCutoff(now, 30)).toEqual(at('2026-10-25T12:00:00Z'));
    expect(retentionCutoff(at('2024-03-31T00:30:00Z'), 365)).toEqual(at('2023-04-01T00:30:00Z'));
  });

  it('refuses a retention that is not a whole number of days', () => {
    expect(() => retentionCutoff(now, 0)).toThrow(RangeError);
    expect(() => retentionCutoff(now, 1.5)).toThrow(RangeError);
  });

  it('lets go only of partitions whose whole range is before the cutoff, oldest first', () => {
    const weeks = [
      weekPartition(at('2026-10-05T00:00:00Z')),
      weekPartition(at('2026-09-28T00:00:00Z')),
      weekPartition(at('2026-10-19T00:00:00Z')), // ends 2026-10-26: after the cutoff below
      weekPartition(at('2026-10-12T00:00:00Z')), // ends 2026-10-19
    ];
    const existing: ExistingPartition[] = [
      { name: 'deliberation_events_default', from: null, to: null },
      ...weeks,
    ];
    const cutoff = at('2026-10-25T12:00:00Z');
    expect(partitionsPastCutoff(existing, cutoff).map((p) => p.name)).toEqual([
      'deliberation_events_w20260928',
      'deliberation_events_w20261005',
      'deliberation_events_w20261012',
    ]);
    // A range ending exactly at the cutoff is wholly before it.
    expect(partitionsPastCutoff(existing, at('2026-10-26T00:00:00Z')).map((p) => p.name)).toContain(
      'deliberation_events_w20261019',
    );
  });
});
