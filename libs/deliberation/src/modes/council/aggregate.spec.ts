import { aggregateRankings, createLabelMap, describeAggregate } from './aggregate';

describe('createLabelMap', () => {
  it('labels responses A, B, C in order', () => {
    expect(createLabelMap(['x/a', 'y/b', 'z/c'])).toEqual({
      'Response A': 'x/a',
      'Response B': 'y/b',
      'Response C': 'z/c',
    });
  });
});

describe('aggregateRankings', () => {
  const labels = createLabelMap(['m/a', 'm/b', 'm/c']);

  it('averages positions and sorts best first', () => {
    const result = aggregateRankings(
      [
        ['Response B', 'Response A', 'Response C'],
        ['Response B', 'Response C', 'Response A'],
        ['Response A', 'Response B', 'Response C'],
      ],
      labels,
    );
    expect(result).toEqual([
      { model: 'm/b', averageRank: 1.33, rankingsCount: 3 },
      { model: 'm/a', averageRank: 2, rankingsCount: 3 },
      { model: 'm/c', averageRank: 2.67, rankingsCount: 3 },
    ]);
  });

  it('counts only the rankings that placed a model', () => {
    expect(aggregateRankings([['Response C'], ['Response A', 'Response C']], labels)).toEqual([
      { model: 'm/a', averageRank: 1, rankingsCount: 1 },
      { model: 'm/c', averageRank: 1.5, rankingsCount: 2 },
    ]);
  });

  it('is empty when every ranking is empty', () => {
    expect(aggregateRankings([], labels)).toEqual([]);
    expect(describeAggregate([])).toMatch(/No ranking/);
  });
});
