import type { LiveCalls } from './live-calls';
import type { StopHearing } from './stop-hearing';
import type { LoadedDeliberation, ModeEvent, PlannedCall } from './types';

/**
 * The next stage of a deliberation whose commit this process just wrote: the state a load would
 * now return, the stage's plan, and its opening, stored by that commit. When the next stage's job
 * runs here, it starts from this instead of loading the message, planning and opening the stage.
 */
export interface Carried {
  stage: string;
  loaded: LoadedDeliberation;
  calls: PlannedCall[];
  opening: ModeEvent[];
  at: number;
  /** StopHearing's mark from before the commit's write: a stop missed since then voids this. */
  heard: number | null;
}

/** How many carried stages a process keeps, and for how long (a job normally takes one in ms). */
const CARRIED_LIMIT = 10_000;
const CARRIED_TTL_MS = 60_000;

/** Next stages this process committed the way to, by message (see Carried). */
export class CarriedStages {
  private readonly carried = new Map<string, Carried>();

  constructor(
    private readonly now: () => number,
    private readonly hearing: StopHearing,
    private readonly live: LiveCalls,
  ) {}

  /**
   * The carried state of the message's next stage, when it is `stage`'s (taken: used once at most)
   * and still true: no stop of the message was heard here, and none can have been missed since the
   * commit that carried it (the control channel never broke meanwhile). Otherwise the stage loads.
   */
  take(messageId: string, stage: string, usable: boolean): Carried | undefined {
    const entry = this.carried.get(messageId);
    if (!entry || entry.stage !== stage) return undefined;
    this.carried.delete(messageId);
    const fresh = this.now() - entry.at <= CARRIED_TTL_MS;
    const unstopped = this.hearing.heardSince(entry.heard) && !this.live.wasStopped(messageId);
    return usable && fresh && unstopped ? entry : undefined;
  }

  carry(messageId: string, entry: Carried): void {
    this.carried.delete(messageId);
    this.carried.set(messageId, entry);
    // Oldest first: entries whose stage ran in another process (or never ran) age out.
    for (const [id, old] of this.carried) {
      if (this.carried.size <= CARRIED_LIMIT && this.now() - old.at <= CARRIED_TTL_MS) break;
      this.carried.delete(id);
    }
  }

  /** Forgets the message's carried stage: its next stage's job loads again. */
  drop(messageId: string): void {
    this.carried.delete(messageId);
  }
}
