import { isTerminalStatus, type DeliveredEvent, type FirstStageStart } from '@conclave/contracts';
import { ModelCallError, userFacingCallError, type ModelProvider } from '@conclave/llm';
import { Coalescer } from './coalescer';
import { writeThroughOutage, type StoreRetry } from './held-outcomes';
import { endingWrite, STOPPED_CALL_ERROR, type DeliberationEnd } from './ending';
import { DeliberationStopped, LiveCalls } from './live-calls';
import { StopHearing } from './stop-hearing';
import { chainOf, chainState, cutDecision, cutOutcome, isCut } from './quorum';
import { fallbackTitle } from '../shared/title';
import { awaitTitle, titleCallFor, titleFields, type TitleFields } from './title-call';
import { CarriedStages, type Carried } from './carried-stages';
import { stripEchoedMarkers } from '../shared/fence';
import type {
  AnyModeDefinition,
  CallOutcome,
  DeliberationContext,
  DeliberationStore,
  EventPublisher,
  LoadedDeliberation,
  MessageUpdate,
  ModeRegistry,
  ModeEvent,
  PlannedCall,
  StageReduction,
  StageScheduler,
  StageTransition,
  StageWrite,
  StageWriteResult,
  StoredStages,
  SuccessfulCall,
} from './types';
import { inStoredOrder } from './stored-order';

export interface StageRunnerOptions {
  historyTurns: number;
  /** The whole deliberation is cut off after this long (00-shared.md §2). */
  deliberationCapMs: number;
  titleTimeoutMs?: number;
  /** How long a finished pipeline waits for a title call still in flight before using the fallback. */
  titleGraceMs?: number;
  now?: () => number;
  log?: (message: string) => void;
  /**
   * Gets the full detail of every failed model call and attempt (hosts, the provider's own words),
   * for the operator's log; users and the database only get describeCallError's words.
   */
  logCallError?: (failure: CallFailureDetail) => void;
  /** Called once a deliberation has ended (complete, failed), e.g. to start the next batch item. */
  onFinished?: (messageId: string, batchId: string | null) => Promise<void>;
  /** The calls in flight here: their answers so far (deltas) and the switch that stops them. */
  live?: LiveCalls;
  /**
   * Keeps answers through a storage outage: writes of settled calls (and a stage's opening) that
   * fail because the store is away are tried again, within bounds, instead of failing the stage.
   * Without it such a write fails the stage at once (its job runs again and calls again).
   */
  storeRetry?: StoreRetry;
  /**
   * Told of calls that were made but whose outcomes could not be stored (the stage gave up on
   * storage, or a write was refused), with the stage each was made for: their usage is to be
   * counted all the same (the provider bills them). Must not throw.
   */
  onUnstored?: (messageId: string, calls: { stage: string; outcome: CallOutcome }[]) => void;
  /**
   * Whether stops reach this process without a break (the control channel): state held in memory
   * (a carried stage, a job's start) is used only when no stop can have been missed since it was
   * true. Absent: always heard (a runner whose only stops are its own end/stopCalls).
   */
  hearing?: StopHearing;
}

/** A failed model call or attempt, as the operator's log gets it. */
export interface CallFailureDetail {
  stage: string;
  model: string;
  /** The provider's message: may name hosts and quote the provider (credentials already removed). */
  detail: string;
  kind?: string;
  status?: number;
  /** Set when the attempt is retried: which one failed, and the wait before the next. */
  retry?: { attempt: number; delayMs: number };
}

function contextOf(loaded: LoadedDeliberation, now: number, capMs: number): DeliberationContext<unknown> {
  return {
    messageId: loaded.messageId,
    conversationId: loaded.conversationId,
    question: loaded.question,
    config: loaded.config,
    history: loaded.history,
    rows: loaded.rows,
    outcomes: loaded.outcomes,
    elapsedMs: now - loaded.createdAt.getTime(),
    deliberationCapMs: capMs,
  };
}

function progressEvent(
  stage: string,
  call: PlannedCall,
  state: 'started' | 'succeeded' | 'failed' | 'retrying',
  extra: Record<string, unknown> = {},
  keySuffix = '',
): ModeEvent {
  return {
    key: `model_progress:${stage}:${call.key}:${state}${keySuffix}`,
    type: 'model_progress',
    payload: { stage, participant: call.participant, state, ...extra },
  };
}

/** The event that reports how a call settled. */
function settledEvent(stage: string, call: PlannedCall, outcome: CallOutcome): ModeEvent {
  if (!outcome.ok) {
    return progressEvent(stage, call, 'failed', {
      responseTimeMs: outcome.responseTimeMs,
      error: outcome.error,
    });
  }
  // The answer itself, so a view shows each one as it lands. It goes with `participant`, which is
  // anonymous where the mode keeps authors hidden during the run (Delphi).
  return progressEvent(stage, call, 'succeeded', {
    responseTimeMs: outcome.responseTimeMs,
    content: outcome.content,
    ...(outcome.finishReason === 'length' ? { truncated: true } : {}),
  });
}

/** Events to deliver as a call settles: its model_progress, then the mode's own (e.g. juror_complete). */
type SettledEvents = (call: PlannedCall, outcome: CallOutcome) => ModeEvent[];

/** A call and how it settled, before its outcome is stored. */
interface Settled {
  call: PlannedCall;
  outcome: CallOutcome;
  /** The conversation's title call, made beside the stage's own (stage 'title', no events). */
  title?: boolean;
  /** False for a seat's model that failed while a fallback remains: the seat is not settled yet. */
  final?: boolean;
}

/**
 * The margin for the difference between a gateway's clock and a worker's when a job's start is
 * trusted: stops must have been heard without a break since this long before the message was stored.
 */
export const START_CLOCK_SKEW_MS = 1000;

/** The next stage's opening, planned while its commit is built (StageRunner.openNext). */
interface NextOpening {
  stage: string;
  /** The calls the opening announces ('started'). */
  calls: PlannedCall[];
  opening: ModeEvent[];
  /** StopHearing's mark from before the commit's write. */
  heard: number | null;
}

/** What else a stage's commit carries besides its reduction. */
interface Closing {
  /** Events delivered before the stage's own: the opening of a stage with nothing to call. */
  leading?: ModeEvent[];
  /** The calls that settled last, stored in the commit's transaction, with their settle events. */
  last?: Settled[];
  eventsOf?: SettledEvents;
  /** Reduces again from stored outcomes (an earlier run's) that stand in for those of `last`. */
  reduceWith?: (latest: CallOutcome[]) => StageReduction;
  /** Every outcome of the stage once `latest` (the stored ones of `last`) are in. */
  outcomesWith?: (latest: CallOutcome[]) => CallOutcome[];
  /** The title call's outcome and title, stored with the commit. */
  title?: TitleFields;
  /** The title call's outcome, stored before or with the commit. */
  titleStored?: CallOutcome | null;
  /** The title call runs in this job and has not settled: the commit does not wait for it. */
  titlePending?: boolean;
  /** Its answers fitted the held bound when taken on: the write may wait for storage (StoreRetry). */
  waits?: boolean;
}

/** What a commit delivers before the stage's own events: the opening, then how the last calls settled. */
function eventsBefore(closing: Closing, lastOutcomes: CallOutcome[]): ModeEvent[] {
  return [
    ...(closing.leading ?? []),
    ...(closing.last ?? []).flatMap(({ call }, i) => closing.eventsOf?.(call, lastOutcomes[i]) ?? []),
  ];
}

/**
 * The engine's own events after a stage's: for the end of a deliberation, `title_complete` (its
 * title filled in by the store, and only for a conversation that needs one) and `complete`; for a
 * failure, `error`.
 */
function closingEvents(transition: StageTransition, withTitle: boolean): ModeEvent[] {
  if (transition.kind === 'next') return [];
  if (transition.kind === 'fail') {
    return [{ key: 'error', type: 'error', payload: { message: transition.message } }];
  }
  return [
    ...(withTitle
      ? [{ key: 'title_complete', type: 'title_complete', payload: { data: { title: null } } }]
      : []),
    { key: 'complete', type: 'complete', payload: {} },
  ];
}

function messageUpdateFor(transition: StageTransition): MessageUpdate {
  if (transition.kind === 'next') return { status: 'running', stage: transition.stage };
  if (transition.kind === 'done') {
    return { status: 'complete', stage: null, content: transition.content, completed: true };
  }
  return { status: 'failed', stage: null, error: transition.message, completed: true };
}

/**
 * A short reason a user can act on: the provider's key and the failure kind, never a host, URL,
 * credential, stack trace or the provider's own words (userFacingCallError). What is stored for
 * users (model_calls.error, stage rows, events, the message's error) is built from this.
 */
export function describeCallError(error: unknown): string {
  return userFacingCallError(error);
}

function callFailureDetail(stage: string, model: string, error: unknown): CallFailureDetail {
  if (error instanceof ModelCallError) {
    return { stage, model, detail: error.message, kind: error.kind, status: error.status };
  }
  return { stage, model, detail: error instanceof Error ? `${error.name}: ${error.message}` : String(error) };
}

/**
 * The signal a call runs under: aborted with a TimeoutError after `timeoutMs`, or with `abandon`'s
 * reason. Not AbortSignal.any([AbortSignal.timeout(…), …]): on Node 20 the composite holds its
 * sources weakly, so a long timeout can be garbage-collected before it fires and the call then
 * never ends (nodejs/node#57736). Here the timer holds the controller until `dispose`.
 */
export function callDeadline(
  timeoutMs: number,
  ...abandon: (AbortSignal | undefined)[]
): { signal: AbortSignal; dispose: () => void } {
  const controller = new AbortController();
  const timer = setTimeout(
    () => controller.abort(new DOMException('The model call timed out', 'TimeoutError')),
    timeoutMs,
  );
  const sources = abandon.filter((signal): signal is AbortSignal => signal !== undefined);
  const listeners = sources.map((source) => {
    const onAbandon = () => controller.abort(source.reason);
    if (source.aborted) onAbandon();
    else source.addEventListener('abort', onAbandon, { once: true });
    return () => source.removeEventListener('abort', onAbandon);
  });
  return {
    signal: controller.signal,
    dispose: () => {
      clearTimeout(timer);
      for (const remove of listeners) remove();
    },
  };
}

/**
 * Runs one stage of one deliberation. Safe to run twice for the same stage: model outcomes are
 * stored as each call settles and reused, and the stage is committed at most once under the
 * message's row lock.
 */
export class StageRunner {
  private readonly now: () => number;
  private readonly live: LiveCalls;
  private readonly hearing: StopHearing;
  /** Next stages this process committed the way to, by message (see Carried). */
  private readonly carried: CarriedStages;
  /**
   * Storage errors a commit met although its outcomes are stored (a write applied before its reply
   * was lost): the calls it carried are not handed to onUnstored, which would count them twice.
   */
  private readonly lostAfterStoring = new WeakSet<object>();
  /**
   * Endings at the time cap whose write waits for storage, by message: the writes of the stage's
   * calls (aborted by the cap) wait for them, so that the commit finds the message ended.
   */
  private readonly capEndings = new Map<string, Promise<unknown>>();

  constructor(
    /** The modes it can run, handed in: the engine knows no mode itself. */
    private readonly modes: ModeRegistry,
    private readonly store: DeliberationStore,
    private readonly provider: ModelProvider,
    private readonly publisher: EventPublisher,
    private readonly scheduler: StageScheduler,
    private readonly options: StageRunnerOptions,
  ) {
    this.now = options.now ?? Date.now;
    this.live = options.live ?? new LiveCalls(null);
    this.hearing = options.hearing ?? new StopHearing();
    this.carried = new CarriedStages(this.now, this.hearing, this.live);
  }

  /**
   * Runs one stage; resolves with the mode when it ran model calls, null when there was nothing to
   * run. `firstStart`: this is the first start of the stage's job. Then, if the previous stage's
   * commit was written by this process, nobody else can have run the stage yet: it starts from the
   * state, plan and opening that commit left here instead of loading the message (see Carried). A
   * job started again (after a stall or a failure) always loads.
   */
  async runStage(
    messageId: string,
    stage: string,
    options: { firstStart?: boolean; start?: FirstStageStart } = {},
  ): Promise<{ mode: string } | null> {
    const firstStart = options.firstStart === true;
    const carried = this.carried.take(messageId, stage, firstStart);
    // A new conversation's first stage, on its job's first start, runs from what the gateway stored
    // (the job carries it); its opening is written with the guard below like any loaded stage's.
    // Only while no stop can have been missed since the message was stored: a stop stored while
    // the control channel was away (Redis down) is found by the load.
    const start =
      !carried && firstStart && options.start && this.trustsStart(messageId, options.start)
        ? options.start
        : undefined;
    const fromStart = start !== undefined;
    const loaded =
      carried?.loaded ??
      (start
        ? loadedFromStart(messageId, stage, start)
        : await this.store.load(messageId, this.options.historyTurns));
    if (!loaded || isTerminalStatus(loaded.status)) {
      // A job run again that finds its deliberation ended: its last commit may have been applied
      // with its reply lost (PostgreSQL away), so its events were never published and a batch's
      // item never moved the batch on. Both are done now; both are idempotent (events keep their
      // seq; a batch starts what its concurrency allows and closes when nothing is left).
      if (loaded && !firstStart) {
        this.publish(await this.store.eventsAfter(messageId, 0));
        if (loaded.batchId !== null) await this.finished(messageId, loaded.batchId);
      }
      return null;
    }
    if (loaded.stage !== stage) {
      // This stage was committed by an earlier attempt that died before it scheduled the next one
      // or published its events: do both again (both are idempotent).
      if (loaded.stage)
        await this.scheduler.enqueueStage(messageId, loaded.stage, { background: loaded.batchId !== null });
      this.publish(await this.store.eventsAfter(messageId, 0));
      return null;
    }
    const mode = this.mode(loaded);
    const ctx = contextOf(loaded, this.now(), this.options.deliberationCapMs);
    const remainingMs = mode.enforcesDeliberationCap
      ? this.options.deliberationCapMs - (this.now() - loaded.createdAt.getTime())
      : Number.POSITIVE_INFINITY;
    if (remainingMs <= 0) {
      await this.endAtCap(loaded);
      return null;
    }

    const calls = carried?.calls ?? mode.plan(stage, ctx);
    const stored = new Map((loaded.outcomes[stage] ?? []).map((o) => [o.key, o]));
    const accepts = (outcome: SuccessfulCall) => mode.accepts?.(stage, ctx, outcome) ?? true;
    // Each planned call is a seat: itself, then its fallbacks (most calls have none).
    const chains = new Map(calls.map((call) => [call.key, chainOf(call)]));
    const place = new Map(
      calls.flatMap((call) => chainOf(call).map((attempt, index) => [attempt.key, { call, index }] as const)),
    );
    const chainAt = (outcomes: Map<string, CallOutcome>, call: PlannedCall) =>
      chainState(chains.get(call.key) ?? [call], (key) => outcomes.get(key), accepts);
    /** A seat's next model, once `outcome` of one of its models is in (null: the seat is settled). */
    const nextAttempt = (call: PlannedCall, outcome: CallOutcome): PlannedCall | null => {
      const at = place.get(call.key);
      if (!at || at.call.fallbacks === undefined) return null;
      const outcomes = new Map(stored);
      outcomes.set(call.key, outcome);
      const state = chainAt(outcomes, at.call);
      return state.kind === 'next' ? (chains.get(at.call.key) ?? [])[state.index] : null;
    };
    const eventsOf: SettledEvents = (call, outcome) => {
      const next = nextAttempt(call, outcome);
      return [
        settledEvent(stage, call, outcome),
        ...(mode.callEvents?.(stage, ctx, outcome) ?? []),
        // The seat passes to its next model: it starts as this one's failure is stored.
        ...(next ? [progressEvent(stage, next, 'started')] : []),
      ];
    };
    /** Every outcome of the stage's calls once `latest` are in, in the order they were stored. */
    const outcomesWith = (latest: CallOutcome[]) => {
      const settled = new Map(stored);
      for (const outcome of latest) settled.set(outcome.key, outcome);
      return [...settled.values()];
    };
    // Reduce sees how long the deliberation has now run (Delphi decides its next round by it), and
    // the outcomes in plan order: a seat's final one in its first call's place.
    const reduceWith = (latest: CallOutcome[]) => {
      const settled = new Map(outcomesWith(latest).map((o) => [o.key, o]));
      const attempts: Record<string, CallOutcome[]> = {};
      const outcomes = calls.map((call) => {
        if (!call.fallbacks) return settled.get(call.key) as CallOutcome;
        const state = chainAt(settled, call);
        if (state.attempts.length > 1) attempts[call.key] = state.attempts;
        // A seat still open here (an earlier run's outcome replaced this one's): its last stands.
        return state.kind === 'done' ? state.outcome : (state.attempts.at(-1) as CallOutcome);
      });
      return mode.reduce(
        stage,
        {
          ...ctx,
          elapsedMs: this.now() - loaded.createdAt.getTime(),
          ...(Object.keys(attempts).length > 0 ? { attempts } : {}),
        },
        outcomes,
      );
    };
    /** The model of each seat that runs now: the first without a stored outcome; none when settled. */
    const firstToRun = (call: PlannedCall): PlannedCall | null => {
      const state = chainAt(stored, call);
      return state.kind === 'next' ? (chains.get(call.key) ?? [call])[state.index] : null;
    };
    // The stage opens with its start events, 'started' for every call about to be made, and the
    // settle events of calls an earlier run of this stage already stored (no-ops when that run
    // delivered them: event keys are unique). A carried stage was opened by the previous commit.
    const opening = carried
      ? []
      : [
          ...mode.startEvents(stage, ctx),
          ...calls.flatMap((call) => {
            const settledBefore = (chains.get(call.key) ?? [call]).flatMap((attempt) => {
              const outcome = stored.get(attempt.key);
              return outcome
                ? [settledEvent(stage, attempt, outcome), ...(mode.callEvents?.(stage, ctx, outcome) ?? [])]
                : [];
            });
            const next = firstToRun(call);
            return [...settledBefore, ...(next ? [progressEvent(stage, next, 'started')] : [])];
          }),
        ];
    const toCall = calls.filter((call) => firstToRun(call) !== null);
    if (toCall.length === 0) {
      // Nothing to wait for: the stage opens and commits in one transaction.
      await this.commit(loaded, mode, stage, reduceWith([]), { leading: opening, outcomesWith });
      return { mode: loaded.mode };
    }
    // The calls start while the opening is written: its round trip and commit are off the
    // stage's critical path. Everything else this run writes waits for it, so 'started' still
    // precedes every retry notice and settle event. While storage is away it is tried again and
    // the calls run on (their answers wait in memory, within StoreRetry's bounds); if it fails for
    // good, the calls are abandoned and the job fails (to be retried) rather than paying for
    // answers that could not be stored. A carried stage has no opening to write: its calls start
    // at once.
    const abandon = new AbortController();
    const openingWrite: StageWrite = { stage, guard: true, markRunning: true, events: opening };
    const opened = carried
      ? Promise.resolve()
      : this.durably(messageId, () => this.store.writeStage(messageId, openingWrite)).then(
          ({ value: written }) => {
            if (written.kind === 'written') this.publish(written.events);
            // Ended (stopped) or moved on since it was loaded: a stop that came before these calls
            // were registered could not abort them, so they are abandoned here.
            else abandon.abort(new DeliberationStopped(STOPPED_CALL_ERROR.failed));
          },
        );
    opened.catch((error: unknown) => abandon.abort(error));

    // A new conversation's title: its call runs beside the first stage that calls models, and its
    // outcome is stored with theirs (no job of its own loads and writes the message again).
    const titleCall = titleCallFor(loaded, mode, ctx, stage);
    let titleStored: CallOutcome | null = null;
    let titlePending = titleCall !== null;

    // Calls that settle together are stored in one transaction; the last of them together with
    // the stage's commit (and the title, when it has settled by then). A seat's model that fails
    // while a fallback remains is stored on its own (`final: false`): the seat is still open.
    let unsettled = toCall.length;
    // Set when a write of settled calls finds the message ended (stopped, capped) or moved on:
    // no seat asks its next fallback after that.
    let ended = false;
    // Set when a write of settled calls failed for good: the stage's job fails, the calls still in
    // flight are aborted (their answers could not be kept) and nothing more of this run is stored.
    let gaveUp: { error: unknown } | null = null;
    const unstored = (group: Settled[]) =>
      this.unstored(
        messageId,
        group.map((g) => ({ stage: g.title ? 'title' : stage, outcome: g.outcome })),
      );
    const settle = new Coalescer(async (group: Settled[]): Promise<CallOutcome[]> => {
      if (gaveUp) {
        unstored(group);
        throw gaveUp.error;
      }
      // The answers wait here until stored, when they fit the process's bound (StoreRetry):
      // decided once, so a group that does not fit fails alone and the others wait on.
      const held = this.options.storeRetry?.held.hold(group.map((g) => g.outcome));
      const release = held?.release;
      try {
        return await flush(group, held?.waits ?? true);
      } catch (error) {
        gaveUp ??= { error };
        abandon.abort(error);
        if (!(typeof error === 'object' && error !== null && this.lostAfterStoring.has(error)))
          unstored(group);
        throw error;
      } finally {
        release?.();
      }
    });
    const flush = async (group: Settled[], waits: boolean): Promise<CallOutcome[]> => {
      await opened;
      // The time cap came while storage was away: its end is written first (see endAtCap).
      await this.capEndings.get(messageId)?.catch(() => undefined);
      const titleItem = group.find((g) => g.title);
      const own = group.filter((g) => !g.title);
      const title = titleItem ? titleFields(loaded, titleItem.outcome) : {};
      if (titleItem) titlePending = false;
      unsettled -= own.filter((g) => g.final !== false).length;
      let saved: CallOutcome[];
      if (own.length === 0) {
        // The title alone: the stage's calls are still running, or the stage has been committed.
        // Its failure is the title's, not the stage's: the end falls back to the question's words.
        await this.durably(
          messageId,
          () => this.store.writeStage(messageId, { stage, events: [], ...title }),
          waits,
        ).catch((error: unknown) => {
          this.options.log?.(`could not store the title of ${messageId}: ${String(error)}`);
          if (titleItem) unstored([titleItem]);
        });
        saved = [];
      } else if (unsettled > 0) {
        const settled = await this.settle(messageId, stage, own, eventsOf, title, waits);
        saved = settled.saved;
        if (settled.ended) ended = true;
        saved.forEach((outcome) => stored.set(outcome.key, outcome));
      } else {
        saved = await this.commit(loaded, mode, stage, reduceWith(own.map((g) => g.outcome)), {
          last: own,
          eventsOf,
          reduceWith,
          outcomesWith,
          title,
          titleStored: titleItem?.outcome ?? titleStored,
          titlePending,
          waits,
        });
      }
      if (titleItem) titleStored = titleItem.outcome;
      let next = 0;
      return group.map((g) => (g.title ? g.outcome : saved[next++]));
    };
    const timeoutMs = mode.timeoutMs(ctx.config);
    // The cap stops the deliberation the way a user's stop does: calls in flight are aborted at
    // once, their outcomes stored, and the stage's commit finds the message ended.
    const cap = Number.isFinite(remainingMs)
      ? setTimeout(() => void this.endAtCap(loaded), remainingMs)
      : null;

    // Quorum and deadline (opt-in): the stage goes on without the members still running, which
    // are aborted and stored as failed with a `cut: …` error. Decided from what is stored first,
    // so a retried stage whose earlier run had decided cuts the rest at once, without calling them.
    const gate = mode.gate?.(stage, ctx, calls) ?? null;
    const cutters = new Map<string, AbortController>();
    // What the gate counts: the members' settled outcomes; only those the mode can read count.
    const settledMembers = [...stored.values()];
    let pending = toCall.length;
    let deadlinePassed = false;
    let cutReason: string | null = null;
    const storedCut = [...stored.values()].find(isCut);
    const decide = () => {
      if (!gate || cutReason) return;
      cutReason = cutDecision(gate, {
        settled: settledMembers,
        pending,
        deadlinePassed,
        storedCut: storedCut && !storedCut.ok ? storedCut.error : null,
      });
      if (!cutReason) return;
      for (const cutter of cutters.values()) cutter.abort(new DeliberationStopped(cutReason));
    };
    decide();
    // Measured from the stage's opening as stored: a retried job does not get a fresh deadline.
    // A stage opened by this job (or carried here) starts its clock now.
    const openedAt = carried ? null : (loaded.stageOpenedAt ?? null);
    const sinceOpened = openedAt ? Math.max(0, this.now() - openedAt.getTime()) : 0;
    const deadline =
      gate?.deadlineMs != null && !cutReason
        ? setTimeout(
            () => {
              deadlinePassed = true;
              decide();
            },
            Math.max(0, gate.deadlineMs - sinceOpened),
          )
        : null;

    /** Runs one seat to its end: its first model without an outcome, then its fallbacks as needed. */
    const runSeat = async (call: PlannedCall): Promise<void> => {
      const chain = chains.get(call.key) ?? [call];
      let attempt = firstToRun(call) as PlannedCall;
      for (;;) {
        const cutter = new AbortController();
        cutters.set(attempt.key, cutter);
        const outcome = cutReason
          ? cutOutcome(attempt, cutReason)
          : await this.callOne(messageId, stage, attempt, {
              timeoutMs,
              after: opened,
              abandon: abandon.signal,
              cut: cutter.signal,
            });
        cutters.delete(attempt.key);
        const next = nextAttempt(attempt, outcome);
        if (!next) {
          pending -= 1;
          settledMembers.push(outcome);
          decide();
          await settle.submit({ call: attempt, outcome });
          return;
        }
        const saved = await settle.submit({ call: attempt, outcome, final: false });
        stored.set(attempt.key, saved);
        if (ended) {
          // The deliberation ended while this model failed: its next fallback is not asked.
          pending -= 1;
          return;
        }
        const state = chainAt(stored, call);
        if (state.kind === 'done') {
          // An earlier run of the stage stored an answer that settles the seat: commit with it.
          pending -= 1;
          await settle.submit({ call: attempt, outcome: saved });
          return;
        }
        attempt = chain[state.index];
      }
    };
    try {
      // allSettled semantics: callOne never rejects, one failure never cancels the others.
      await Promise.all([
        ...toCall.map((call) => runSeat(call)),
        ...(titleCall
          ? [
              (async () =>
                settle.submit({
                  call: titleCall,
                  title: true,
                  // Not abandoned with the stage: a conversation keeps its title after a stopped turn.
                  // Except when the stage ran from its job's start and its opening found the turn
                  // stopped or deleted before it began (a load would have made no call at all).
                  outcome: await this.callOne(messageId, 'title', titleCall, {
                    timeoutMs: this.options.titleTimeoutMs ?? 30_000,
                    silent: true,
                    ...(fromStart ? { abandon: abandon.signal } : {}),
                  }),
                }))(),
            ]
          : []),
      ]);
    } finally {
      if (cap) clearTimeout(cap);
      if (deadline) clearTimeout(deadline);
    }
    return { mode: loaded.mode };
  }

  /** Whether a new conversation's first job may run from its start (see runStage) rather than a load. */
  private trustsStart(messageId: string, start: FirstStageStart): boolean {
    const storedAt = Date.parse(start.createdAt);
    return (
      Number.isFinite(storedAt) &&
      this.hearing.heardSinceTime(storedAt, START_CLOCK_SKEW_MS) &&
      !this.live.wasStopped(messageId)
    );
  }

  /**
   * The next stage's opening, written with the commit of `reduction` (moving on to another stage):
   * planned from the state a load would then return as far as the engine can tell (the stored rows
   * and the reduction's, in the store's order: inStoredOrder; the stage's outcomes); the calls the stage runs are planned
   * again from what the commit's write answers it stored (carryNext). Null when the cap has passed
   * or planning fails (the next stage's job then loads, plans and opens as usual).
   */
  private openNext(
    loaded: LoadedDeliberation,
    mode: AnyModeDefinition,
    stage: string,
    reduction: StageReduction,
    outcomes: CallOutcome[],
    titleOutcome: CallOutcome | null | undefined,
  ): NextOpening | null {
    const { transition } = reduction;
    if (transition.kind !== 'next') return null;
    const elapsed = this.now() - loaded.createdAt.getTime();
    if (mode.enforcesDeliberationCap && elapsed >= this.options.deliberationCapMs) return null;
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
      const ctx = contextOf(ahead, this.now(), this.options.deliberationCapMs);
      const calls = mode.plan(transition.stage, ctx);
      const opening = [
        ...mode.startEvents(transition.stage, ctx),
        ...calls.map((call) => progressEvent(transition.stage, call, 'started')),
      ];
      // Marked before the commit's write is sent (this runs while it is built): a stop stored
      // after that write must have been heard for the carried stage to be used.
      return { stage: transition.stage, calls, opening, heard: this.hearing.mark() };
    } catch (error) {
      this.options.log?.(`could not prepare ${transition.stage} of ${loaded.messageId}: ${String(error)}`);
      return null;
    }
  }

  /**
   * The next stage to carry, once the commit that opened it is written: its state is what the
   * write answered it stored (rows and outcomes as a load reads them), and its calls are planned
   * from that. Null when the store did not answer with it, or when the calls differ from those the
   * opening announced (then the next stage's job loads, and finds its opening stored).
   */
  private carryNext(
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
        // Opened by the commit; its job starts the stage's clock when it runs it (see runStage).
        stageOpenedAt: null,
        rows: stored.rows,
        outcomes: stored.outcomes,
      };
      const calls = mode.plan(next.stage, contextOf(state, this.now(), this.options.deliberationCapMs));
      const announced = (list: PlannedCall[]) =>
        list.map((c) => `${c.key}\u0000${c.participant}`).join('\u0001');
      if (announced(calls) !== announced(next.calls)) return null;
      return {
        stage: next.stage,
        loaded: state,
        calls,
        opening: next.opening,
        at: this.now(),
        heard: next.heard,
      };
    } catch (error) {
      this.options.log?.(`could not prepare ${next.stage} of ${loaded.messageId}: ${String(error)}`);
      return null;
    }
  }

  /**
   * Ends a deliberation from outside its stages (a user's stop, the time cap): writes the ending,
   * publishes it, aborts the calls of it that run in this process and lets the batch move on.
   * Resolves with how the store answered: `skipped` when it had already ended.
   */
  async end(
    messageId: string,
    stage: string | null,
    batchId: string | null,
    end: DeliberationEnd,
  ): Promise<StageWriteResult> {
    this.carried.drop(messageId);
    const written = await this.store.writeStage(messageId, endingWrite(stage, end));
    if (written.kind !== 'written') return written;
    this.publish(written.events);
    this.stopCalls(messageId, end.kind);
    if (written.events.length > 0) await this.finished(messageId, batchId);
    return written;
  }

  /** Aborts the calls of a deliberation that run in this process (it was ended elsewhere). */
  stopCalls(messageId: string, kind: DeliberationEnd['kind']): number {
    // Its next stage, if carried, must load again and find it ended.
    this.carried.drop(messageId);
    return this.live.stop(messageId, STOPPED_CALL_ERROR[kind]);
  }

  /**
   * Ends a deliberation at its time cap. With StoreRetry its calls in this process are aborted at
   * once, whether or not storage answers (their outcomes are stored as stopped, as after a user's
   * stop), and the ending is written as soon as storage takes it, within STORE_HOLD_MS; the
   * writes of those calls wait for it, so the stage's commit finds the message ended.
   */
  private async endAtCap(loaded: LoadedDeliberation): Promise<void> {
    const { messageId, stage, batchId } = loaded;
    const seconds = Math.round(this.options.deliberationCapMs / 1000);
    const end: DeliberationEnd = {
      kind: 'failed',
      message: `The deliberation ran past its ${seconds} s limit and was stopped.`,
    };
    if (!this.options.storeRetry) {
      try {
        await this.end(messageId, stage, batchId, end);
      } catch (error) {
        // The calls still end at their own timeout, and the reconciler finds a stalled message.
        this.options.log?.(`could not stop ${messageId} at its time limit: ${String(error)}`);
      }
      return;
    }
    const ending = this.durably(messageId, () => this.store.writeStage(messageId, endingWrite(stage, end)));
    this.capEndings.set(messageId, ending);
    this.stopCalls(messageId, end.kind);
    try {
      const { value: written } = await ending;
      if (written.kind !== 'written') return;
      this.publish(written.events);
      if (written.events.length > 0) await this.finished(messageId, batchId);
    } catch (error) {
      // Its stage's job fails with the same outage and runs again later: past the cap, it ends then.
      this.options.log?.(`could not stop ${messageId} at its time limit: ${String(error)}`);
    } finally {
      if (this.capEndings.get(messageId) === ending) this.capEndings.delete(messageId);
    }
  }

  /**
   * Finds deliberations that stopped moving: a gateway that died between storing a request and
   * enqueueing it, a job lost with Redis, a final-failure hook that never ran. Safe on every worker.
   */
  async reconcile(idleMs: number): Promise<number> {
    let repaired = 0;
    for (const { messageId, stage, batchId } of await this.store.unfinishedMessages(idleMs)) {
      const state = await this.scheduler.stageJobState(messageId, stage);
      if (state === 'pending') continue;
      repaired += 1;
      if (state === 'failed') {
        await this.failPermanently(
          messageId,
          `The deliberation stopped because of an internal error during ${stage}. Please try again.`,
        );
      } else {
        await this.scheduler.rescheduleStage(messageId, stage, { background: batchId !== null });
      }
    }
    return repaired;
  }

  /** The last word on a deliberation whose job failed for good (retries spent, or stalled out). */
  async failPermanently(messageId: string, reason: string): Promise<void> {
    const loaded = await this.store.load(messageId, 0);
    if (!loaded || isTerminalStatus(loaded.status)) return;
    // The same write as every stage's: it does nothing once the message has ended meanwhile.
    await this.end(messageId, loaded.stage, loaded.batchId, { kind: 'failed', message: reason });
  }

  /**
   * Events are stored before they are published, and subscribers catch up from the store, so a
   * failed publish delays delivery but loses nothing: it must not fail the stage.
   */
  private publish(events: DeliveredEvent[]): void {
    // Not awaited: nothing on the stage's path waits for Redis to acknowledge a PUBLISH. Commands
    // on one connection keep their order, so events still leave in seq order.
    this.publisher.publish(events).catch((error: unknown) => {
      this.options.log?.(`could not publish ${events.length} event(s): ${String(error)}`);
    });
  }

  private mode(loaded: LoadedDeliberation): AnyModeDefinition {
    const mode = this.modes(loaded.mode);
    if (!mode) throw new Error(`mode ${loaded.mode} is not available`);
    return mode;
  }

  /**
   * Stores the outcomes of calls that settled together, and their events, in one round trip. An
   * outcome is kept even when the deliberation has ended meanwhile: usage adds up model_calls.
   * `ended`: the message had ended or moved past the stage, so only the outcomes were stored.
   */
  private async settle(
    messageId: string,
    stage: string,
    settled: Settled[],
    eventsOf: SettledEvents,
    title: TitleFields,
    waits: boolean,
  ): Promise<{ saved: CallOutcome[]; ended: boolean }> {
    const { written, saved } = await this.writeSettled(
      messageId,
      settled.map((s) => s.outcome),
      (outcomes) => ({
        stage,
        events: settled.flatMap(({ call }, i) => eventsOf(call, outcomes[i])),
        ...title,
      }),
      waits,
    );
    if (written.kind === 'written') this.publish(written.events);
    return { saved, ended: written.kind !== 'written' };
  }

  /**
   * Writes a stage together with the outcomes of calls that settled. When an earlier run stored some
   * of them first, conclave_stage_write stores the rest, writes nothing else and answers with the
   * stored ones: the write is built again from those and sent without outcomes. Returns the answer
   * of the write that was applied and the outcomes that stand.
   */
  private async writeSettled(
    messageId: string,
    outcomes: CallOutcome[],
    build: (outcomes: CallOutcome[]) => StageWrite,
    waits: boolean,
  ): Promise<{
    written: Exclude<StageWriteResult, { kind: 'replaced' }>;
    saved: CallOutcome[];
    /** The storage error a write met before it went through (it may have been applied then). */
    failed: unknown;
  }> {
    const write = { ...build(outcomes), outcomes };
    const first = await this.durably(messageId, () => this.store.writeStage(messageId, write), waits);
    if (first.value.kind !== 'replaced')
      return { written: first.value, saved: outcomes, failed: first.failed };
    const stored = first.value.outcomes;
    const rewrite = build(stored);
    const again = await this.durably(messageId, () => this.store.writeStage(messageId, rewrite), waits);
    if (again.value.kind === 'replaced') throw new Error('a stage write without outcomes answered replaced');
    return { written: again.value, saved: stored, failed: first.failed ?? again.failed };
  }

  /**
   * A write, tried again while the store is unavailable (StoreRetry): the answers it carries are
   * kept instead of asked for again. Without StoreRetry, or once waiting is over, its error stands.
   * `waits`: false for answers that did not fit the held bound when taken on (no waiting for them).
   */
  private async durably<T>(
    messageId: string,
    write: () => Promise<T>,
    waits = true,
  ): Promise<{ value: T; failed: unknown }> {
    const retry = this.options.storeRetry;
    if (!retry) return { value: await write(), failed: null };
    return writeThroughOutage(write, {
      isUnavailable: retry.isUnavailable,
      maxWaitMs: retry.maxWaitMs,
      canWait: waits,
      now: this.now,
      ...(retry.sleep ? { sleep: retry.sleep } : {}),
      ...(retry.attemptMs ? { attemptMs: retry.attemptMs } : {}),
      onWait: (error, attempt) => {
        if (attempt !== 1) return;
        this.options.log?.(
          `storage unavailable, stage waits up to ${retry.maxWaitMs} ms to store what ${messageId} has: ${String(error)}`,
        );
      },
    });
  }

  /** Hands calls whose outcomes could not be stored to onUnstored, so their usage still counts. */
  private unstored(messageId: string, calls: { stage: string; outcome: CallOutcome }[]): void {
    if (calls.length === 0 || !this.options.onUnstored) return;
    try {
      this.options.onUnstored(messageId, calls);
    } catch (error) {
      this.options.log?.(`could not keep the usage of ${calls.length} unstored call(s): ${String(error)}`);
    }
  }

  /** Makes one call; never rejects. The caller stores the outcome. */
  private async callOne(
    messageId: string,
    stage: string,
    call: PlannedCall,
    options: {
      timeoutMs: number;
      silent?: boolean;
      /** Retry notices are written after this (the stage's opening). */
      after?: Promise<void>;
      /** Aborts the call: the stage could not be opened. */
      abandon?: AbortSignal;
      /** Aborts the call: the stage went on without it (quorum, deadline). */
      cut?: AbortSignal;
    },
  ): Promise<CallOutcome> {
    const started = this.now();
    // Retry notices are stored without holding up the retry, but before the call's outcome is
    // handed back: a 'retrying' event must precede the call's settle event, and a deliberation
    // must not end while one is still on its way (it would then be dropped).
    let notices: Promise<void> = (options.after ?? Promise.resolve()).catch(() => undefined);
    let outcome: CallOutcome;
    const live = options.silent ? null : this.live.begin(messageId, stage, call);
    const untrack = this.live.track(messageId, stage, call);
    const deadline = callDeadline(options.timeoutMs, options.abandon, live?.signal, options.cut);
    try {
      const completion = await this.provider.complete({
        model: call.model,
        messages: call.messages,
        signal: deadline.signal,
        ...(live ? { onDelta: (text: string) => live.onDelta(text) } : {}),
        onRetry: (notice) => {
          this.options.logCallError?.({
            stage,
            model: call.model,
            detail: notice.detail ?? notice.reason,
            retry: { attempt: notice.attempt, delayMs: notice.delayMs },
          });
          if (options.silent) return;
          const retrying = progressEvent(
            stage,
            call,
            'retrying',
            { error: notice.reason },
            `:${notice.attempt}`,
          );
          notices = notices
            .then(() => this.store.writeStage(messageId, { stage, events: [retrying] }))
            .then((written) => {
              if (written.kind === 'written') this.publish(written.events);
            })
            .catch((error: unknown) => {
              this.options.log?.(`could not store a retry notice: ${String(error)}`);
            });
        },
      });
      outcome = {
        ok: true,
        key: call.key,
        model: call.model,
        // PostgreSQL text cannot hold NUL; a model that emits one must not fail the stage.
        content: stripEchoedMarkers(completion.content.replaceAll('\u0000', ''), call.messages),
        servedModel: completion.servedModel,
        responseTimeMs: this.now() - started,
        promptTokens: completion.usage?.promptTokens ?? null,
        completionTokens: completion.usage?.completionTokens ?? null,
        costUsd: completion.usage?.costUsd ?? null,
        simulated: completion.simulated,
        finishReason: completion.finishReason ?? null,
      };
    } catch (error) {
      const stopped: unknown = deadline.signal.aborted ? deadline.signal.reason : null;
      if (!(stopped instanceof DeliberationStopped)) {
        this.options.logCallError?.(callFailureDetail(stage, call.model, error));
      }
      outcome = {
        ok: false,
        key: call.key,
        model: call.model,
        error: stopped instanceof DeliberationStopped ? stopped.reason : describeCallError(error),
        responseTimeMs: this.now() - started,
      };
    } finally {
      deadline.dispose();
      live?.end();
      untrack();
    }
    await notices;
    return outcome;
  }

  /**
   * Commits a stage: stores the outcomes of the calls that settled last, the stage's rows and
   * events, and moves the message on, in one round trip; then publishes and schedules. When an
   * earlier run stored some of the last outcomes first, the stage is reduced from the stored ones.
   * Returns the stored outcomes of `closing.last`.
   */
  private async commit(
    loaded: LoadedDeliberation,
    mode: AnyModeDefinition,
    stage: string,
    reduction: StageReduction,
    closing: Closing = {},
  ): Promise<CallOutcome[]> {
    const { messageId, question, needsTitle } = loaded;
    const last = closing.last ?? [];
    // Before the write: a title write elsewhere waits for the row lock this one holds. A title
    // known to be stored (loaded, carried, or stored by this job) needs no wait, and one still
    // running in this very job cannot be waited for here (its write queues behind this one).
    const titleKnown =
      (loaded.outcomes.title?.length ?? 0) > 0 ||
      Boolean(closing.titleStored) ||
      closing.titlePending === true;
    if (reduction.transition.kind === 'done' && needsTitle && !titleKnown)
      await awaitTitle(this.store, messageId, this.options.titleGraceMs ?? 5000, this.now);
    const mine = last.map((s) => s.outcome);
    let committed = reduction;
    let next: NextOpening | null = null;
    const { written, saved, failed } = await this.writeSettled(
      messageId,
      mine,
      (outcomes) => {
        // Built again from the stored outcomes when an earlier run's stand in for these.
        if (outcomes !== mine && closing.reduceWith) committed = closing.reduceWith(outcomes);
        const { rows, events, transition } = committed;
        // Moving on: the next stage opens in this same commit (its start and 'started' events),
        // and the write answers with what it stored, for the next stage to run from.
        next = this.openNext(
          loaded,
          mode,
          stage,
          committed,
          closing.outcomesWith?.(outcomes) ?? outcomes,
          closing.titleStored,
        );
        return {
          stage,
          guard: true,
          rows,
          events: [
            ...eventsBefore(closing, outcomes),
            ...events,
            ...closingEvents(transition, needsTitle),
            ...(next?.opening ?? []),
          ],
          update: messageUpdateFor(transition),
          ...(next ? { loaded: true } : {}),
          ...(transition.kind === 'done' && needsTitle ? { title: fallbackTitle(question) } : {}),
          ...closing.title,
        };
      },
      closing.waits ?? true,
    );
    if (written.kind !== 'written') {
      // A commit that met the outage may have been applied before its connection went: its job
      // runs again and finds the stage committed. It then enqueues the next stage and publishes
      // the stored events; after the last stage it finds the message ended, publishes them and
      // a batch's item lets the batch move on (see the start of runStage).
      if (failed !== null) {
        // 'skipped' comes after the outcomes are stored (or answered 'replaced' with them).
        if (written.kind === 'skipped' && typeof failed === 'object') this.lostAfterStoring.add(failed);
        throw failed;
      }
      return saved;
    }
    const delivered = written.events;
    if (delivered.length > 0) this.publish(delivered);
    const { transition } = committed;
    if (transition.kind === 'next') {
      // Before the enqueue, so that a job of the next stage taken here finds it.
      const carried = next && this.carryNext(loaded, mode, next, written.stored);
      if (carried) this.carried.carry(messageId, carried);
      await this.scheduler.enqueueStage(messageId, transition.stage, { background: loaded.batchId !== null });
    } else if (delivered.length > 0) {
      await this.finished(messageId, loaded.batchId);
    }
    return saved;
  }

  private async finished(messageId: string, batchId: string | null): Promise<void> {
    try {
      await this.options.onFinished?.(messageId, batchId);
    } catch (error) {
      // the reconciler dispatches a batch's next items if this is lost
      this.options.log?.(`after ${messageId} finished: ${String(error)}`);
    }
  }
}

/**
 * What a load of a new conversation's message returns before its first stage ran, from the start
 * its job carries (FirstStageStart): queued at `stage`, a title to make, nothing stored yet.
 */
export function loadedFromStart(
  messageId: string,
  stage: string,
  start: FirstStageStart,
): LoadedDeliberation {
  return {
    messageId,
    conversationId: start.conversationId,
    mode: start.mode,
    status: 'queued',
    stage,
    needsTitle: true,
    createdAt: new Date(start.createdAt),
    batchId: null,
    stageOpenedAt: null,
    question: start.question,
    config: start.config,
    history: [],
    rows: [],
    outcomes: {},
  };
}
