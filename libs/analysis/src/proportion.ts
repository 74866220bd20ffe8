import { twoSidedZ } from './normal';
import { checkConfidence, type EstimateWithInterval, type Interval } from './result';

/**
 * Wilson score interval for a proportion (Wilson 1927; method 3 in Newcombe 1998). Unlike the
 * textbook p ± z·√(p(1−p)/n) it stays inside [0, 1] and keeps its coverage at 0 or n successes and
 * for the small per-model counts a batch produces. `successes` may be fractional (shared wins).
 * Null when there are no trials.
 */
export function wilsonInterval(successes: number, trials: number, confidence = 0.95): Interval | null {
  checkConfidence(confidence);
  if (!(trials >= 0) || !(successes >= 0) || successes > trials) {
    throw new RangeError(`need 0 ≤ successes ≤ trials, got ${successes} of ${trials}`);
  }
  if (trials === 0) return null;
  const z = twoSidedZ(confidence);
  const p = successes / trials;
  const z2n = (z * z) / trials;
  const centre = (p + z2n / 2) / (1 + z2n);
  const half = (z * Math.sqrt((p * (1 - p)) / trials + z2n / (4 * trials))) / (1 + z2n);
  return {
    lower: successes === 0 ? 0 : Math.max(0, centre - half),
    upper: successes === trials ? 1 : Math.min(1, centre + half),
    confidence,
    method: 'wilson-score',
  };
}

export type ProportionEstimate = EstimateWithInterval & {
  readonly successes: number;
  readonly trials: number;
};

/** A rate with its Wilson interval, or a reason when there were no trials. */
export function proportion(successes: number, trials: number, confidence = 0.95): ProportionEstimate {
  const interval = wilsonInterval(successes, trials, confidence);
  if (interval === null) {
    return { value: null, reason: 'no trials', interval: null, intervalReason: null, successes, trials };
  }
  return { value: successes / trials, reason: null, interval, intervalReason: null, successes, trials };
}

export interface WinRecord {
  readonly participant: string;
  /** Contests the participant took part in. */
  readonly contests: number;
  /** Contests it won alone. */
  readonly outrightWins: number;
  /** Contests it shared first place in. */
  readonly tiedWins: number;
  /** outrightWins / contests, with a Wilson interval. */
  readonly winRate: ProportionEstimate;
  /** (outright wins + 1/k for each k-way shared first place) / contests, with a Wilson interval. */
  readonly winShare: ProportionEstimate;
}

export interface WinSummary {
  readonly contests: number;
  /** Contests whose first place was shared. */
  readonly ties: number;
  /** Contests with no winner at all (e.g. every vote failed to parse). */
  readonly undecided: number;
  /** Highest win share first, then name. */
  readonly participants: readonly WinRecord[];
}

/**
 * Wins per model over a batch of contests (vote and debate items), one contest at a time. A tie is
 * reported both ways: not an outright win, and a 1/k share of a win, so a reader can see how much
 * of a model's record comes from shared first places.
 */
export class WinCounter {
  private readonly records = new Map<
    string,
    { contests: number; outright: number; tied: number; share: number }
  >();
  private contests = 0;
  private ties = 0;
  private undecided = 0;

  /**
   * `winners` are the participants sharing first place (one for a clear win, none when the contest
   * produced no decision). Winners not listed among the participants are added to them.
   */
  addContest(participants: Iterable<string>, winners: Iterable<string>): void {
    const winnerSet = new Set(winners);
    const everyone = new Set([...participants, ...winnerSet]);
    this.contests++;
    if (winnerSet.size === 0) this.undecided++;
    if (winnerSet.size > 1) this.ties++;
    for (const name of everyone) {
      const record = this.records.get(name) ?? { contests: 0, outright: 0, tied: 0, share: 0 };
      record.contests++;
      if (winnerSet.has(name)) {
        if (winnerSet.size === 1) record.outright++;
        else record.tied++;
        record.share += 1 / winnerSet.size;
      }
      this.records.set(name, record);
    }
  }

  result(confidence = 0.95): WinSummary {
    const participants = [...this.records].map(([participant, r]): WinRecord => ({
      participant,
      contests: r.contests,
      outrightWins: r.outright,
      tiedWins: r.tied,
      winRate: proportion(r.outright, r.contests, confidence),
      // Fractional shares can exceed the count by a rounding ulp; clamp before the interval.
      winShare: proportion(Math.min(r.share, r.contests), r.contests, confidence),
    }));
    participants.sort(
      (a, b) =>
        (b.winShare.value ?? -1) - (a.winShare.value ?? -1) ||
        (a.participant < b.participant ? -1 : a.participant > b.participant ? 1 : 0),
    );
    return { contests: this.contests, ties: this.ties, undecided: this.undecided, participants };
  }
}
