import type { Carried } from './carried-stages';
import { inStoredOrder } from './stored-order';
import { contextOf, progressEvent } from './stage-events';
import type { StopHearing } from './stop-hearing';
import type {
  AnyModeDefinition,
  CallOutcome,
  LoadedDeliberation,
  ModeEvent,
  PlannedCall,
  StageReduction,
  StoredStages,
} from './types';

/**
 * The next stage, planned while the commit that moves a deliberation on is built: the commit
 * opens it (writes its start and 'started' events) in the same round trip, and its write answers
 * with what it stored (StageWrite.loaded), from which the stage is carried to its job (Carried):
 * no load, no opening write.
 */
export interface NextOpening {
  stage: string;
  /** The calls the opening announces ('started'). */
  calls: PlannedCall[];
  opening: ModeEvent[];
  /** StopHearing's mark from before the commit's write. */
  heard: number | null;
}

export interface NextStageClock {
  now: () => number;
  hearing: StopHearing;
  deliberationCapMs: number;
  log?: (message: string) => void;
}

/**
 * The next stage's opening, written with the commit of `reduction` (moving on to another stage):
 * planned from the state a load would then return as far as the engine can tell (the stored rows
 * and the reduction's, in the store's order: inStoredOrder; the stage's outcomes); the calls the
 * stage runs are planned again from what the commit's write answers it stored (carryNext). Null
 * when the cap has passed or planning fails (the next stage's job then loads, plans and opens as
 * usual).
 */
export function openNext(
  clock: NextStageClock,
  loaded: LoadedDeliberation,
  mode: AnyModeDefinition,
  stage: string,
  reduction: StageReduction,
  outcomes: CallOutcome[],
  titleOutcome: CallOutcome | null | undefined,
): NextOpening | null {
  const { transition } = reduction;
  if (transition.kind !== 'next') return null;
  const elapsed = clock.now() - loaded.createdAt.getTime();
  if (mode.enforcesDeliberationCap && elapsed >= clock.deliberationCapMs) return null;
  try {
    const ahead: LoadedDeliberation = {
      ...loaded,
      rows: inStoredOrder([...loaded.rows, ...reduction.rows]),
      outcomes: {
        ...loaded.outcomes,
        ...(outcomes.length > 0 ? { [stage]: outcomes } : {}),
        ...(titleOutcome && !loaded.outcomes.title?.length ? { title: [titleOutcome] } : {}),
      },
    };
    const ctx = contextOf(ahead, clock.now(), clock.deliberationCapMs);
    const calls = mode.plan(transition.stage, ctx);
    const opening = [
      ...mode.startEvents(transition.stage, ctx),
      ...calls.map((call) => progressEvent(transition.stage, call, 'started')),
    ];
    // Marked before the commit's write is sent (this runs while it is built): a stop stored
    // after that write must have been heard for the carried stage to be used.
    return { stage: transition.stage, calls, opening, heard: clock.hearing.mark() };
  } catch (error) {
    clock.log?.(`could not prepare ${transition.stage} of ${loaded.messageId}: ${String(error)}`);
    return null;
  }
}

/**
 * What a load returns once a write that answered `stored` is applied after `loaded` (which a load,
 * or an earlier such answer, gave): the rows of an earlier stage order than any written, then the
 * rows the store gave from there on; the outcomes of the stages it gave, the others as loaded.
 */
export function afterStored(
  loaded: Pick<LoadedDeliberation, 'rows' | 'outcomes'>,
  stored: StoredStages,
): Pick<LoadedDeliberation, 'rows' | 'outcomes'> {
  const { from } = stored;
  return {
    rows:
      from === null ? loaded.rows : [...loaded.rows.filter((row) => row.stageOrder < from), ...stored.rows],
    outcomes: { ...loaded.outcomes, ...stored.outcomes },
  };
}

/** The calls an opening announces, as its 'started' events name them. */
const announced = (calls: PlannedCall[]): string =>
  calls.map((c) => `${c.key}\u0000${String(c.participant)}`).join('\u0001');

/**
 * The next stage to carry, once the commit that opened it is written: its state is what the
 * write answered it stored (rows and outcomes as a load reads them), and its calls are planned
 * from that. Null when the store did not answer with it, or when the calls differ from those the
 * opening announced (then the next stage's job loads, and finds its opening stored).
 */
export function carryNext(
  clock: NextStageClock,
  loaded: LoadedDeliberation,
  mode: AnyModeDefinition,
  next: NextOpening,
  stored: StoredStages | undefined,
): Carried | null {
  if (!stored) return null;
  try {
    const state: LoadedDeliberation = {
      ...loaded,
      status: 'running',
      stage: next.stage,
      // Opened by the commit; its job starts the stage's clock when it runs it (see StageRun).
      stageOpenedAt: null,
      ...afterStored(loaded, stored),
    };
    const calls = mode.plan(next.stage, contextOf(state, clock.now(), clock.deliberationCapMs));
    if (announced(calls) !== announced(next.calls)) return null;
    return {
      stage: next.stage,
      loaded: state,
      calls,
      opening: next.opening,
      at: clock.now(),
      heard: next.heard,
    };
  } catch (error) {
    clock.log?.(`could not prepare ${next.stage} of ${loaded.messageId}: ${String(error)}`);
    return null;
  }
}
