import type { ReportCouncil } from '@conclave/contracts';
import type { BootstrapOptions } from '../bootstrap';
import { CouncilRankingAccumulator } from '../ranking';
import { councilFacts } from './extract';
import { bootstrapFigure, pooledRate, rate } from './figures';
import type { ClusterCount } from '../inference/cluster-proportion';
import { leaderboardNote, overlapsNext } from './leaderboard';
import { notComputablePositionBias } from './position';
import { ReferenceTracker, type ReferenceExclusion } from './reference';
import type { ReportItem, ReportStageCalls, ReportStageRow } from './rows';

export const COUNCIL_POSITION_EXPLANATION =
  'Council labels the answers Response A, B, C… in the order of the council roster on every item ' +
  '(libs/deliberation council.mode.ts, createLabelMap), so a position is always the same model: a ' +
  'position effect cannot be told apart from that model’s quality, and position bias cannot be computed.';

/** Council items: rankings, Borda, self-preference, chairman failures, agreement with a reference. */
export class CouncilReportBuilder {
  private readonly rankings = new CouncilRankingAccumulator();
  private readonly reference = new ReferenceTracker(
    'the best-ranked model (the aggregate ranking’s first place)',
  );
  private items = 0;
  /** Per item: its unparsed rankings of the rankings returned (every council member ranks each item). */
  private readonly unparsedClusters: ClusterCount[] = [];

  /** An item that is not complete (failed, cancelled, unfinished): counted in the reference counts. */
  addExcluded(item: ReportItem, reason: ReferenceExclusion): void {
    this.reference.addExcluded(item, reason);
  }

  addItem(item: ReportItem, rows: readonly ReportStageRow[]): void {
    const facts = councilFacts(rows);
    this.items++;
    this.rankings.addItem(facts.ballots, facts.candidates);
    this.unparsedClusters.push({
      successes: facts.rankings.filter((r) => !r.parsed).length,
      trials: facts.rankings.length,
    });
    this.reference.add(item, typeof item.reference === 'string' ? item.reference : null, facts.winner);
  }

  result(options: BootstrapOptions, stageCalls: readonly ReportStageCalls[]): ReportCouncil {
    const ranking = this.rankings.result(options);
    const chairmen = stageCalls.filter((c) => c.mode === 'council' && c.stage === 'stage3');
    const reached = chairmen.reduce((sum, c) => sum + c.calls, 0);
    const overlaps = overlapsNext(ranking.models.map((m) => bootstrapFigure(m.averageRank).interval));
    const failed = chairmen.reduce((sum, c) => sum + c.failed, 0);
    return {
      items: this.items,
      ballots: ranking.ballots,
      unparsedRankings: pooledRate(this.unparsedClusters, {
        ...options,
        seed: `${String(options.seed ?? '')}:share:unparsed-rankings`,
      }),
      models: ranking.models.map((m, i) => ({
        model: m.model,
        itemsRanked: m.itemsRanked,
        ballots: m.ballots,
        averageRank: bootstrapFigure(m.averageRank),
        firstPlaceShare: bootstrapFigure(m.firstPlaceShare),
        bordaPoints: m.bordaPoints,
        bordaPointsPerItem: bootstrapFigure(m.bordaPointsPerItem),
        overlapsNext: overlaps[i],
        selfPreference: {
          n: m.selfPreference.items,
          meanSelfRank: m.selfPreference.meanSelfRank,
          meanOthersRank: m.selfPreference.meanOthersRank,
          difference: bootstrapFigure(m.selfPreference.difference),
        },
      })),
      leaderboardNote: leaderboardNote(ranking.models.length, 'average rank'),
      chairman: {
        itemsReached: reached,
        failures: rate(failed, reached),
        byModel: chairmen
          .map((c) => ({ model: c.model, items: c.calls, failures: c.failed }))
          .sort((a, b) => b.failures - a.failures || (a.model < b.model ? -1 : 1)),
      },
      positionBias: notComputablePositionBias(COUNCIL_POSITION_EXPLANATION),
      reference: this.reference.result(),
    };
  }
}
