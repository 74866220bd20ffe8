import type { ReportPositionBias, ReportPositionGroup } from '@conclave/contracts';
import { chiSquareUpperTail, rate } from './figures';

const labelOf = (position: number) => `Response ${String.fromCharCode(64 + position)}`;

/**
 * Votes by the position the chosen answer was shown at. With labels shuffled per item, every
 * model is equally likely at every position, so without a position effect each of k positions
 * gets 1/k of the votes; a χ² test against that uniform split says how surprising the counts are.
 */
export class PositionTracker {
  private readonly groups = new Map<number, { items: number; votes: number[] }>();

  /** One item: how many answers were shown, and the 1-based position of each valid vote. */
  add(answersShown: number, votedPositions: readonly number[]): void {
    if (answersShown < 2) return;
    let group = this.groups.get(answersShown);
    if (group === undefined) {
      group = { items: 0, votes: new Array<number>(answersShown).fill(0) };
      this.groups.set(answersShown, group);
    }
    group.items++;
    for (const position of votedPositions) {
      if (position >= 1 && position <= answersShown) group.votes[position - 1]++;
    }
  }

  result(explanation: string): ReportPositionBias {
    const groups = [...this.groups]
      .sort(([a], [b]) => a - b)
      .map(([k, group]): ReportPositionGroup => {
        const total = group.votes.reduce((a, b) => a + b, 0);
        const expected = total / k;
        const statistic =
          total === 0
            ? null
            : group.votes.reduce((sum, observed) => sum + (observed - expected) ** 2 / expected, 0);
        return {
          answersShown: k,
          items: group.items,
          validVotes: total,
          positions: group.votes.map((votes, i) => ({
            position: i + 1,
            label: labelOf(i + 1),
            votes: rate(votes, total),
            expectedShare: 1 / k,
          })),
          chiSquare:
            statistic === null
              ? null
              : { statistic, degreesOfFreedom: k - 1, pValue: chiSquareUpperTail(statistic, k - 1) },
        };
      });
    return { computable: true, explanation, groups };
  }
}

export const notComputablePositionBias = (explanation: string): ReportPositionBias => ({
  computable: false,
  explanation,
  groups: [],
});
