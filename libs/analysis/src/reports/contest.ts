import type { ReportContestModel, ReportDebate, ReportRevisionModel, ReportVote } from '@conclave/contracts';
import { CategoryCounts } from '../descriptive';
import { contestFacts, labelPosition, type ContestFacts } from './extract';
import type { BootstrapOptions } from '../bootstrap';
import type { ClusterCount } from '../inference/cluster-proportion';
import { clusteredRate, distribution, pooledRate, rate } from './figures';
import { leaderboardNote, overlapsNext } from './leaderboard';
import { PositionTracker } from './position';
import { ReferenceTracker, type ReferenceExclusion } from './reference';
import type { ReportItem, ReportStageRow } from './rows';

export const VOTE_POSITION_EXPLANATION =
  'Vote shuffles the label order on every item (seeded by the item’s id), so each model is shown at ' +
  'each position equally often and votes by position measure the position effect alone.';
export const DEBATE_POSITION_EXPLANATION =
  'Debate shuffles the labels of the revised answers on every item before the vote (seeded by the ' +
  'item’s id), so votes by position measure the position effect alone. (Round 1 labels follow the ' +
  'roster, but nobody votes on them.)';

interface ModelTally {
  contests: number;
  wins: number;
  tiedFirst: number;
  winsByTiebreak: number;
  votesReceived: number;
  votesOnItems: number;
  /** Per item the model contested: votes it received of the item's valid votes (the share's clusters). */
  voteClusters: ClusterCount[];
}

interface RevisionTally {
  revisions: number;
  revise: number;
  stand: number;
  merge: number;
  unparsed: number;
  /** Per item the model revised on: its decisions there (a model on two seats, or over rounds, decides more than once). */
  perItem: { revisions: number; revise: number; stand: number; merge: number; unparsed: number }[];
}

/** Vote and debate items: wins, ties, votes by position, debate's revisions. */
export class ContestReportBuilder {
  private readonly models = new Map<string, ModelTally>();
  private readonly revisions = new Map<string, RevisionTally>();
  private readonly positions = new PositionTracker();
  private readonly reference = new ReferenceTracker('the winner model');
  private readonly brokenBy: CategoryCounts<string>;
  private readonly winnerDecision = new CategoryCounts<string>(['REVISE', 'STAND', 'MERGE', 'unparsed']);
  private items = 0;
  private decided = 0;
  private tied = 0;
  /** Per item: its invalid votes of all its votes (the invalid-vote share's clusters). */
  private readonly invalidClusters: ClusterCount[] = [];
  private winnerRevised = 0;

  constructor(private readonly mode: 'vote' | 'debate') {
    // Vote's chairman breaks ties (alphabetical when it cannot); debate's ties go alphabetically.
    this.brokenBy = new CategoryCounts<string>(
      mode === 'vote' ? ['chairman', 'alphabetical'] : ['alphabetical'],
    );
  }

  private tally(model: string): ModelTally {
    let tally = this.models.get(model);
    if (tally === undefined) {
      tally = {
        contests: 0,
        wins: 0,
        tiedFirst: 0,
        winsByTiebreak: 0,
        votesReceived: 0,
        votesOnItems: 0,
        voteClusters: [],
      };
      this.models.set(model, tally);
    }
    return tally;
  }

  /** An item that is not complete (failed, cancelled, unfinished): counted in the reference counts. */
  addExcluded(item: ReportItem, reason: ReferenceExclusion): void {
    this.reference.addExcluded(item, reason);
  }

  addItem(item: ReportItem, rows: readonly ReportStageRow[]): ContestFacts {
    const facts = contestFacts(this.mode, rows);
    this.items++;
    this.invalidClusters.push({
      successes: facts.invalidVotes,
      trials: facts.validVotes + facts.invalidVotes,
    });
    const tiedModels = new Set(facts.tiedLabels.map((l) => facts.labelToModel[l]).filter(Boolean));
    const received = new Map<string, number>();
    const positions: number[] = [];
    for (const vote of facts.votes) {
      if (vote.votedFor === null) continue;
      const model = facts.labelToModel[vote.votedFor];
      if (model === undefined) continue;
      received.set(model, (received.get(model) ?? 0) + 1);
      const position = labelPosition(vote.votedFor);
      if (position !== null) positions.push(position);
    }
    for (const model of facts.contestants) {
      const t = this.tally(model);
      t.contests++;
      if (facts.winner === model) {
        t.wins++;
        if (facts.tiebroken) t.winsByTiebreak++;
      }
      if (tiedModels.has(model)) t.tiedFirst++;
      t.votesReceived += received.get(model) ?? 0;
      t.votesOnItems += facts.validVotes;
      t.voteClusters.push({ successes: received.get(model) ?? 0, trials: facts.validVotes });
    }
    if (facts.winner !== null) {
      this.decided++;
      if (facts.isTie) this.tied++;
      if (facts.tiebroken) this.brokenBy.add(facts.tiebreakMethod ?? 'unknown');
    }
    this.positions.add(Object.keys(facts.labelToModel).length, positions);
    this.reference.add(item, typeof item.reference === 'string' ? item.reference : null, facts.winner);
    if (this.mode === 'debate') {
      const onItem = new Map<string, RevisionTally['perItem'][number]>();
      for (const revision of facts.revisions) {
        let r = this.revisions.get(revision.model);
        if (r === undefined) {
          r = { revisions: 0, revise: 0, stand: 0, merge: 0, unparsed: 0, perItem: [] };
          this.revisions.set(revision.model, r);
        }
        let own = onItem.get(revision.model);
        if (own === undefined) {
          own = { revisions: 0, revise: 0, stand: 0, merge: 0, unparsed: 0 };
          onItem.set(revision.model, own);
          r.perItem.push(own);
        }
        r.revisions++;
        own.revisions++;
        const decision =
          revision.decision === 'REVISE'
            ? 'revise'
            : revision.decision === 'STAND'
              ? 'stand'
              : revision.decision === 'MERGE'
                ? 'merge'
                : 'unparsed';
        r[decision]++;
        own[decision]++;
      }
      if (facts.winner !== null) {
        const decision = facts.winnerDecision;
        this.winnerDecision.add(
          decision === 'REVISE' || decision === 'STAND' || decision === 'MERGE' ? decision : 'unparsed',
        );
        if (decision === 'REVISE' || decision === 'MERGE') this.winnerRevised++;
      }
    }
    return facts;
  }

  private voteResult(options: BootstrapOptions): ReportVote {
    const models = [...this.models]
      .map(([model, t]): Omit<ReportContestModel, 'overlapsNext'> => ({
        model,
        contests: t.contests,
        wins: t.wins,
        winRate: rate(t.wins, t.contests),
        tiedFirst: t.tiedFirst,
        winsByTiebreak: t.winsByTiebreak,
        // All voters on an item see the same answers and mostly agree: the share's interval
        // resamples items, not votes.
        voteShare: clusteredRate(t.voteClusters, {
          ...options,
          seed: `${String(options.seed ?? '')}:share:${model}`,
        }),
      }))
      .sort(
        (a, b) =>
          (b.winRate.value ?? -1) - (a.winRate.value ?? -1) ||
          (a.model < b.model ? -1 : a.model > b.model ? 1 : 0),
      );
    const overlaps = overlapsNext(models.map((m) => m.winRate.interval));
    return {
      items: this.items,
      // The votes on one item come from the same voters on the same answers: clustered by item.
      invalidVotes: pooledRate(this.invalidClusters, {
        ...options,
        seed: `${String(options.seed ?? '')}:share:invalid`,
      }),
      models: models.map((m, i) => ({ ...m, overlapsNext: overlaps[i] })),
      leaderboardNote: leaderboardNote(models.length, 'win rate'),
      ties: {
        tied: rate(this.tied, this.decided),
        brokenBy: distribution(this.brokenBy.result()).categories,
      },
      positionBias: this.positions.result(
        this.mode === 'vote' ? VOTE_POSITION_EXPLANATION : DEBATE_POSITION_EXPLANATION,
        options,
      ),
      reference: this.reference.result(),
    };
  }

  result(options: BootstrapOptions = {}): ReportVote {
    return this.voteResult(options);
  }

  debateResult(options: BootstrapOptions = {}): ReportDebate {
    const revisions = [...this.revisions]
      .map(([model, r]): ReportRevisionModel => {
        // Wilson while the model decides once per item; clustered by item when it decides more often.
        const share = (decision: 'revise' | 'stand' | 'merge' | 'unparsed') =>
          pooledRate(
            r.perItem.map((own) => ({ successes: own[decision], trials: own.revisions })),
            { ...options, seed: `${String(options.seed ?? '')}:share:${decision}:${model}` },
          );
        return {
          model,
          revisions: r.revisions,
          revise: share('revise'),
          stand: share('stand'),
          merge: share('merge'),
          unparsed: share('unparsed'),
        };
      })
      .sort((a, b) => (a.model < b.model ? -1 : a.model > b.model ? 1 : 0));
    return {
      ...this.voteResult(options),
      revisions,
      winnerDecision: distribution(this.winnerDecision.result()),
      winnerWasRevised: rate(this.winnerRevised, this.decided),
    };
  }
}
