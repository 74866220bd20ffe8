import type { AggregateRanking } from '@conclave/contracts';
import { labelMapOf } from '../../shared/labels';

/** `Response A`, `Response B`, … in the order the responses are given. */
export function createLabelMap(models: readonly string[]): Record<string, string> {
  if (models.length > 26) throw new RangeError('at most 26 responses can be labelled');
  return labelMapOf(models);
}

/**
 * Average position of each model over the rankings that placed it (1 = best), best first.
 * Empty rankings are excluded; ties keep the label order.
 */
export function aggregateRankings(
  rankings: readonly (readonly string[])[],
  labelToModel: Readonly<Record<string, string>>,
): AggregateRanking[] {
  const positions = new Map<string, number[]>();
  for (const ranking of rankings) {
    ranking.forEach((label, index) => {
      const model = labelToModel[label];
      if (model === undefined) return;
      positions.set(model, [...(positions.get(model) ?? []), index + 1]);
    });
  }
  const labelOrder = Object.values(labelToModel);
  return [...positions.entries()]
    .map(([model, ranks]) => ({
      model,
      averageRank: Math.round((ranks.reduce((a, b) => a + b, 0) / ranks.length) * 100) / 100,
      rankingsCount: ranks.length,
    }))
    .sort(
      (a, b) => a.averageRank - b.averageRank || labelOrder.indexOf(a.model) - labelOrder.indexOf(b.model),
    );
}

export function describeAggregate(aggregate: readonly AggregateRanking[]): string {
  if (aggregate.length === 0) return 'No ranking could be parsed; no aggregate ranking.';
  return aggregate
    .map((a, i) => `${i + 1}. ${a.model} — average rank ${a.averageRank} over ${a.rankingsCount} ranking(s)`)
    .join('\n');
}
