import type { ReportPositionBias, ReportPositionGroup, ReportPositionTest } from '@conclave/contracts';
import type { BootstrapOptions } from '../bootstrap';
import { holmAdjust } from '../inference/exact';
import { positionPermutationTest, type PositionItem } from '../inference/position-permutation';
import { pooledRate } from './figures';

const labelOf = (position: number) => `Response ${String.fromCharCode(64 + position)}`;

/** Relabellings per position test in a report: p-values resolve to 1/1 001. */
export const REPORT_POSITION_RESAMPLES = 1000;

/**
 * Votes by the position the chosen answer was shown at. With labels shuffled per item, every
 * model is equally likely at every position, so without a position effect each of k positions
 * gets 1/k of the votes. Whether the counts depart from that is tested with the item as the unit
 * (`positionPermutationTest`): all voters on an item saw the same shuffle and mostly chose the same
 * answer, so treating votes as independent would overstate the evidence many times over.
 */
export class PositionTracker {
  private readonly groups = new Map<number, { votes: number[]; items: PositionItem[] }>();

  /** One item: how many answers were shown, and the 1-based position of each valid vote. */
  add(answersShown: number, votedPositions: readonly number[]): void {
    if (answersShown < 2) return;
    let group = this.groups.get(answersShown);
    if (group === undefined) {
      group = { votes: new Array<number>(answersShown).fill(0), items: [] };
      this.groups.set(answersShown, group);
    }
    const valid = votedPositions.filter((position) => position >= 1 && position <= answersShown);
    for (const position of valid) group.votes[position - 1]++;
    group.items.push({ answersShown, votedPositions: valid });
  }

  result(explanation: string, options: BootstrapOptions = {}): ReportPositionBias {
    const ordered = [...this.groups].sort(([a], [b]) => a - b);
    const tests = ordered.map(([k, group]) =>
      positionPermutationTest(group.items, {
        resamples: REPORT_POSITION_RESAMPLES,
        seed: `${String(options.seed ?? 'conclave')}:positions:${k}`,
      }),
    );
    // Several groups (items that showed different numbers of answers) are several tests.
    const adjusted = tests.length > 1 ? holmAdjust(tests.map((t) => (t.run ? t.pValue : null))) : null;
    const groups = ordered.map(([k, group], index): ReportPositionGroup => {
      const total = group.votes.reduce((a, b) => a + b, 0);
      const outcome = tests[index];
      const test: ReportPositionTest = outcome.run
        ? {
            run: true,
            method: outcome.method,
            unit: 'item',
            items: outcome.items,
            statistic: outcome.statistic,
            degreesOfFreedom: k - 1,
            pValue: outcome.pValue,
            holmAdjustedPValue: adjusted?.[index] ?? null,
            resamples: outcome.resamples,
            seed: String(outcome.seed),
          }
        : { run: false, items: outcome.items, reason: outcome.reason };
      return {
        answersShown: k,
        items: group.items.length,
        validVotes: total,
        positions: group.votes.map((_votes, i) => ({
          position: i + 1,
          label: labelOf(i + 1),
          // An item's voters saw the same shuffle and mostly chose the same position: the share's
          // interval resamples items, each with all its votes.
          votes: pooledRate(
            group.items.map((item) => ({
              successes: item.votedPositions.filter((p) => p === i + 1).length,
              trials: item.votedPositions.length,
            })),
            { ...options, seed: `${String(options.seed ?? '')}:share:position:${k}:${i + 1}` },
          ),
          expectedShare: 1 / k,
        })),
        test,
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
