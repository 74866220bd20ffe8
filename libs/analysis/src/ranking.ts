import { bootstrapMean, type BootstrapEstimate, type BootstrapOptions } from './bootstrap';
import { RunningStats } from './descriptive';
import { NumericSample } from './quantile';

/** One council member's ranking of the anonymized answers, with labels already mapped to models. */
export interface RankingBallot {
  /** The model that wrote this ranking; needed for self-preference, may be null if unknown. */
  readonly ranker: string | null;
  /** Models, best first. Repeats after the first mention are ignored; omitted models are unranked. */
  readonly ranking: readonly string[];
}

export interface SelfPreference {
  /** Items where the model ranked its own answer and at least one other member ranked it too. */
  readonly items: number;
  /** Mean rank the model gave its own answer over those items. */
  readonly meanSelfRank: number | null;
  /** Mean, over the same items, of the mean rank the other members gave that answer. */
  readonly meanOthersRank: number | null;
  /**
   * meanSelfRank − meanOthersRank, i.e. the mean per-item difference, with a bootstrap interval.
   * Rank 1 is best, so a NEGATIVE value means the model rates its own answer better than its peers
   * do (self-preference); positive means self-deprecation.
   */
  readonly difference: BootstrapEstimate;
}

export interface ModelRanking {
  readonly model: string;
  /** Items on which at least one ballot ranked the model. */
  readonly itemsRanked: number;
  /** Ballots that ranked the model. */
  readonly ballots: number;
  /** Mean over items of the model's mean rank on the item (1 = best), with a bootstrap interval. */
  readonly averageRank: BootstrapEstimate;
  /**
   * Share of its items on which the model had the best mean rank; a k-way tie for first gives each
   * tied model 1/k. With a bootstrap interval.
   */
  readonly firstPlaceShare: BootstrapEstimate;
  /** Borda count over all ballots: with m candidates on the item, place p earns m − p points. */
  readonly bordaPoints: number;
  /** Mean over the items it was ranked on of its Borda points there, with a bootstrap interval. */
  readonly bordaPointsPerItem: BootstrapEstimate;
  readonly selfPreference: SelfPreference;
}

export interface CouncilRankingReport {
  readonly items: number;
  readonly ballots: number;
  /** Best average rank first; models never ranked last. */
  readonly models: readonly ModelRanking[];
}

interface ModelState {
  readonly averageRanks: NumericSample;
  readonly firstPlace: NumericSample;
  readonly selfDifferences: NumericSample;
  /** Per item the model was ranked on: its Borda points there. */
  readonly bordaPerItem: NumericSample;
  readonly selfRanks: RunningStats;
  readonly othersRanks: RunningStats;
  bordaPoints: number;
  ballots: number;
}

/**
 * Council ranking statistics accumulated one item (deliberation) at a time. Per model it keeps
 * four compact numeric columns (8 bytes per item each) because the intervals are bootstraps over
 * items; everything else is a running sum.
 */
export class CouncilRankingAccumulator {
  private readonly states = new Map<string, ModelState>();
  private itemCount = 0;
  private ballotCount = 0;

  /**
   * One item's ballots. `candidates` lists the models whose answers were up for ranking (Borda's
   * m); by default, every model named in a ballot.
   */
  addItem(ballots: readonly RankingBallot[], candidates: readonly string[] = []): void {
    this.itemCount++;
    const everyone = new Set(candidates);
    const ranksOf = new Map<string, number[]>();
    const selfRankOf = new Map<string, number>();
    const othersRanksOf = new Map<string, number[]>();
    const orders = ballots.map((ballot) => [...new Set(ballot.ranking)]);
    for (const order of orders) for (const model of order) everyone.add(model);
    const m = everyone.size;
    ballots.forEach((ballot, b) => {
      const order = orders[b];
      if (order.length === 0) return;
      this.ballotCount++;
      order.forEach((model, position) => {
        const rank = position + 1;
        const state = this.state(model);
        state.ballots++;
        state.bordaPoints += m - rank;
        push(ranksOf, model, rank);
        if (ballot.ranker === null) return;
        if (ballot.ranker === model) {
          if (!selfRankOf.has(model)) selfRankOf.set(model, rank);
        } else {
          push(othersRanksOf, model, rank);
        }
      });
    });
    let best = Infinity;
    const means = new Map<string, number>();
    for (const [model, ranks] of ranksOf) {
      let points = 0;
      for (const rank of ranks) points += m - rank;
      this.state(model).bordaPerItem.add(points);
      const avg = mean(ranks);
      means.set(model, avg);
      best = Math.min(best, avg);
    }
    const leaders = [...means].filter(([, avg]) => avg - best < 1e-9).map(([model]) => model);
    for (const [model, avg] of means) {
      const state = this.state(model);
      state.averageRanks.add(avg);
      state.firstPlace.add(leaders.includes(model) ? 1 / leaders.length : 0);
      const self = selfRankOf.get(model);
      const others = othersRanksOf.get(model);
      if (self !== undefined && others !== undefined && others.length > 0) {
        const othersMean = mean(others);
        state.selfRanks.add(self);
        state.othersRanks.add(othersMean);
        state.selfDifferences.add(self - othersMean);
      }
    }
  }

  private state(model: string): ModelState {
    let state = this.states.get(model);
    if (state === undefined) {
      state = {
        averageRanks: new NumericSample(),
        firstPlace: new NumericSample(),
        selfDifferences: new NumericSample(),
        bordaPerItem: new NumericSample(),
        selfRanks: new RunningStats(),
        othersRanks: new RunningStats(),
        bordaPoints: 0,
        ballots: 0,
      };
      this.states.set(model, state);
    }
    return state;
  }

  /** Intervals use `options` (same seed for every model, so the report is reproducible). */
  result(options: BootstrapOptions = {}): CouncilRankingReport {
    const models = [...this.states].map(([model, s]): ModelRanking => ({
      model,
      itemsRanked: s.averageRanks.count,
      ballots: s.ballots,
      averageRank: bootstrapMean(s.averageRanks.values(), options),
      firstPlaceShare: bootstrapMean(s.firstPlace.values(), options),
      bordaPoints: s.bordaPoints,
      bordaPointsPerItem: bootstrapMean(s.bordaPerItem.values(), options),
      selfPreference: {
        items: s.selfDifferences.count,
        meanSelfRank: s.selfRanks.mean,
        meanOthersRank: s.othersRanks.mean,
        difference: bootstrapMean(s.selfDifferences.values(), options),
      },
    }));
    models.sort(
      (a, b) =>
        (a.averageRank.value ?? Infinity) - (b.averageRank.value ?? Infinity) ||
        (a.model < b.model ? -1 : a.model > b.model ? 1 : 0),
    );
    return { items: this.itemCount, ballots: this.ballotCount, models };
  }
}

function push(map: Map<string, number[]>, key: string, value: number): void {
  const list = map.get(key);
  if (list === undefined) map.set(key, [value]);
  else list.push(value);
}

function mean(values: readonly number[]): number {
  let sum = 0;
  for (const v of values) sum += v;
  return sum / values.length;
}
