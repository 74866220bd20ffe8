import type { AggregateRanking } from '@conclave/contracts';
import type { ModeEventText } from '../../event-text/reading';
import {
  answersCollected,
  figure,
  fields,
  isObject,
  list,
  plainPhase,
  round2,
  str,
} from '../../event-text/wording';

const ranks = (rankings: AggregateRanking[]): string =>
  rankings.map((r) => `${r.model} ${round2(r.averageRank)}`).join(', ');

/** How council's events read (docs: 01-council.md's event sequence); see event-text/reading.ts. */
export const councilEventText: ModeEventText<'council'> = {
  events: {
    stage1_start: {
      ...plainPhase('stage1', 'start'),
      reasoning: () => 'Stage 1: each council member answers the question.',
      web: null,
    },
    stage1_complete: answersCollected('stage1'),
    stage2_start: {
      ...plainPhase('stage2', 'start'),
      reasoning: () => 'Stage 2: each member ranks the answers, anonymised as Response A, B, …',
      web: null,
    },
    stage2_complete: {
      cli: (e) => `[stage2] complete: ${ranks(e.metadata.aggregateRankings) || 'no ranking could be parsed'}`,
      mcp: (e) =>
        `stage2 complete: average ranks ${ranks(e.metadata.aggregateRankings) || '(no ranking could be parsed)'}`,
      reasoning: (e) => {
        const ranking = list(fields(e.metadata).aggregateRankings)
          .filter(isObject)
          .map((r, i) => `${i + 1}. ${str(r.model) ?? '?'} (average rank ${figure(r.averageRank)})`);
        return ranking.length > 0 ? `Aggregate ranking: ${ranking.join(', ')}.` : 'No ranking could be read.';
      },
      web: null,
    },
    stage3_start: {
      ...plainPhase('stage3', 'start'),
      reasoning: () => 'Stage 3: the chairman writes the synthesis.',
      web: null,
    },
    stage3_complete: {
      cli: (e) => `[stage3] complete: synthesis by ${e.data.model}`,
      mcp: (e) => `stage3 complete: synthesis by ${e.data.model}`,
      // The synthesis itself is streamed as it is written.
      reasoning: null,
      web: null,
    },
  },
  calls: { stage1: 'answered', stage2: 'ranked the anonymised answers', stage3: 'wrote the synthesis' },
};
