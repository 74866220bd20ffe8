import {
  isTerminalStatus,
  type DeliveredEvent,
  type FirstStageStart,
  type ModeName,
} from '@conclave/contracts';
import type { ModelProvider } from '@conclave/llm';
import type { Carried, CarriedStages } from './carried-stages';
import { Coalescer } from './coalescer';
import { gradeRows, gradingFields, storedGrading } from './grade-rows';
import { STOPPED_CALL_ERROR } from './ending';
import type { StoreRetry } from './held-outcomes';
import { DeliberationStopped, type LiveCalls } from './live-calls';
import {
  attachModelGrades,
  isJudgeKey,
  isModelGrading,
  judgeCallsFor,
  judgeCallsToMake,
} from './model-grading';
import { callDeadline, callFailureDetail, describeCallError, type CallFailureDetail } from './model-call';
import { carryNext, openNext, type NextOpening } from './next-stage';
import {
  chainOf,
  chainState,
  cutDecision,
  cutOutcome,
  isCut,
  type ChainState,
  type StageGate,
} from './quorum';
import {
  closingEvents,
  contextOf,
  messageUpdateFor,
  progressEvent,
  settledEvent,
  type SettledEvents,
} from './stage-events';
import type { StopHearing } from './stop-hearing';
import { awaitTitle, titleCallFor, titleFields, type TitleFields } from './title-call';
import { fallbackTitle } from '../shared/title';
import { stripEchoedMarkers } from '../shared/fence';
import type {
  AnyModeDefinition,
  CallOutcome,
  DeliberationContext,
  DeliberationStore,
  LoadedDeliberation,
  ModeEvent,
  PlannedCall,
  StageReduction,
  StageScheduler,
  StageWrite,
  StageWriteResult,
  SuccessfulCall,
} from './types';

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

/**
 * The margin for the difference between a gateway's clock and a worker's when a job's start is
 * trusted: stops must have been heard without a break since this long before the message was stored.
 */
export const START_CLOCK_SKEW_MS = 1000;

/**
 * What a stage job uses of the process that runs it (StageRunner): the ports, the calls in flight
 * here, the next stages carried here, and the writes shared with endings from outside a stage.
 */
export interface StageRunHost {
  readonly store: DeliberationStore;
  readonly provider: ModelProvider;
  readonly scheduler: StageScheduler;
  readonly options: StageRunnerOptions;
  readonly now: () => number;
  readonly live: LiveCalls;
  readonly hearing: StopHearing;
  readonly carried: CarriedStages;
  /**
   * Storage errors a commit met although its outcomes are stored (a write applied before its reply
   * was lost): the calls it carried are not handed to onUnstored, which would count them twice.
   */
  readonly lostAfterStoring: WeakSet<object>;
  mode(name: ModeName): AnyModeDefinition;
  /** The ending at the time cap of the message, while its write waits for storage (endAtCap). */
  capEnding(messageId: string): Promise<unknown> | undefined;
  endAtCap(loaded: LoadedDeliberation): Promise<void>;
  publish(events: DeliveredEvent[]): void;
  finished(messageId: string, batchId: string | null): Promise<void>;
  durably<T>(
    messageId: string,
    write: () => Promise<T>,
    waits?: boolean,
  ): Promise<{ value: T; failed: unknown }>;
  unstored(messageId: string, calls: { stage: string; outcome: CallOutcome }[]): void;
}

/** A call and how it settled, before its outcome is stored. */
interface Settled {
  call: PlannedCall;
  outcome: CallOutcome;
  /** The conversation's title call, made beside the stage's own (stage 'title', no events). */
  title?: boolean;
  /** False for a seat's model that failed while a fallback remains: the seat is not settled yet. */
  final?: boolean;
}

/** What else a stage's commit carries besides its reduction. */
interface Closing {
  /** Events delivered before the stage's own: the opening of a stage with nothing to call. */
  leading?: ModeEvent[];
  /** The calls that settled last, stored in the commit's transaction, with their settle events. */
  last?: Settled[];
  /** The title call's outcome and title, stored with the commit. */
  title?: TitleFields;
  /** The title call's outcome, stored before or with the commit. */
  titleStored?: CallOutcome | null;
  /** The title call runs in this job and has not settled: the commit does not wait for it. */
  titlePending?: boolean;
  /** Its answers fitted the held bound when taken on: the write may wait for storage (StoreRetry). */
  waits?: boolean;
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
    ...gradingFields(storedGrading(start.grading)),
    history: [],
    rows: [],
    outcomes: {},
  };
}

/**
 * One stage job, as an object with named steps. Safe to run twice for the same stage: model
 * outcomes are stored as each call settles and reused, and the stage is committed at most once
 * under the message's row lock.
 *
 * - open: the state (carried here, the job's start, or a load), the plan and the stage's opening;
 * - call: the opening's write and the calls (each seat with its fallbacks, the title call beside
 *   them), under the time cap and the stage's gate (quorum, deadline);
 * - settle: calls that settle together are stored in one round trip (a Coalescer's group);
 * - commit: the last of them with the stage's rows and events, moving the message on (and
 *   opening the next stage) in one round trip;
 * - next: publish, carry the next stage here from what the commit's write answered, enqueue it;
 *   or, at the end, let a batch move on.
 */
export class StageRun {
  readonly messageId: string;
  private readonly ctx: DeliberationContext<unknown>;
  private readonly calls: PlannedCall[];
  /** Each planned call is a seat: itself, then its fallbacks (most calls have none). */
  private readonly chains: Map<string, PlannedCall[]>;
  /** Where each attempt's key sits: its seat and its index in the seat's chain. */
  private readonly place: Map<string, { call: PlannedCall; index: number }>;
  /** The stage's outcomes stored so far (an earlier run's, then this run's), by key. */
  private readonly stored: Map<string, CallOutcome>;
  /** The seats with a model to call now. */
  private readonly toCall: PlannedCall[];
  /** Set while the calls run: the opening's write (everything else this run writes waits for it). */
  private opened: Promise<void> = Promise.resolve();
  /** Aborts the calls: the opening could not be written, or a write of settled calls failed for good. */
  private readonly abandon = new AbortController();
  private readonly settler = new Coalescer((group: Settled[]) => this.settle(group));
  private titleStored: CallOutcome | null = null;
  private titlePending = false;
  /** Seats not settled yet: the group that settles the last of them commits. */
  private unsettled: number;
  /**
   * Set when a write of settled calls finds the message ended (stopped, capped) or moved on: no
   * seat asks its next fallback after that.
   */
  private ended = false;
  /**
   * Set when a write of settled calls failed for good: the stage's job fails, the calls still in
   * flight are aborted (their answers could not be kept) and nothing more of this run is stored.
   */
  private gaveUp: { error: unknown } | null = null;
  // Quorum and deadline (opt-in): the stage goes on without the members still running, which are
  // aborted and stored as failed with a `cut: …` error.
  private readonly gate: StageGate | null;
  private readonly cutters = new Map<string, AbortController>();
  /** What the gate counts: the members' settled outcomes; only those the mode can read count. */
  private readonly settledMembers: CallOutcome[];
  private pending: number;
  private deadlinePassed = false;
  private cutReason: string | null = null;
  private readonly storedCut: CallOutcome | undefined;

  private constructor(
    private readonly host: StageRunHost,
    readonly stage: string,
    private readonly loaded: LoadedDeliberation,
    private readonly mode: AnyModeDefinition,
    private readonly carried: Carried | undefined,
    /** The stage runs from its job's start (loadedFromStart), not from a load. */
    private readonly fromStart: boolean,
    /** What is left of the deliberation's time cap (infinite where the mode has none). */
    private readonly remainingMs: number,
  ) {
    this.messageId = loaded.messageId;
    this.ctx = contextOf(loaded, host.now(), host.options.deliberationCapMs);
    const calls = carried?.calls ?? mode.plan(stage, this.ctx);
    this.calls = calls;
    this.stored = new Map((loaded.outcomes[stage] ?? []).map((o) => [o.key, o]));
    this.chains = new Map(calls.map((call) => [call.key, chainOf(call)]));
    this.place = new Map(
      calls.flatMap((call) => chainOf(call).map((attempt, index) => [attempt.key, { call, index }] as const)),
    );
    this.toCall = calls.filter((call) => this.firstToRun(call) !== null);
    this.unsettled = this.toCall.length;
    this.pending = this.toCall.length;
    this.gate = this.toCall.length > 0 ? (mode.gate?.(stage, this.ctx, calls) ?? null) : null;
    // The model grader's judge calls (stored in the stage, `grade:` keys) are no member's.
    this.settledMembers = [...this.stored.values()].filter((o) => !isJudgeKey(o.key));
    this.storedCut = this.settledMembers.find(isCut);
  }

  get modeName(): string {
    return this.loaded.mode;
  }

  /**
   * Open: the stage's state, plan and opening, or null when there is nothing to run (the
   * deliberation ended or moved past the stage, or its time cap has passed). `firstStart`: this is
   * the first start of the stage's job. Then, if the previous stage's commit was written by this
   * process, nobody else can have run the stage yet: it starts from the state, plan and opening
   * that commit left here instead of loading the message (see Carried). A job started again (after
   * a stall or a failure) always loads.
   */
  static async open(
    host: StageRunHost,
    messageId: string,
    stage: string,
    options: { firstStart?: boolean; start?: FirstStageStart } = {},
  ): Promise<StageRun | null> {
    const firstStart = options.firstStart === true;
    const carried = host.carried.take(messageId, stage, firstStart);
    // A new conversation's first stage, on its job's first start, runs from what the gateway stored
    // (the job carries it); its opening is written with the guard below like any loaded stage's.
    // Only while no stop can have been missed since the message was stored: a stop stored while
    // the control channel was away (Redis down) is found by the load.
    const start =
      !carried && firstStart && options.start && StageRun.trustsStart(host, messageId, options.start)
        ? options.start
        : undefined;
    const loaded =
      carried?.loaded ??
      (start
        ? loadedFromStart(messageId, stage, start)
        : await host.store.load(messageId, host.options.historyTurns));
    if (!loaded || isTerminalStatus(loaded.status)) {
      // A job run again that finds its deliberation ended: its last commit may have been applied
      // with its reply lost (PostgreSQL away), so its events were never published and a batch's
      // item never moved the batch on. Both are done now; both are idempotent (events keep their
      // seq; a batch starts what its concurrency allows and closes when nothing is left).
      if (loaded && !firstStart) {
        host.publish(await host.store.eventsAfter(messageId, 0));
        if (loaded.batchId !== null) await host.finished(messageId, loaded.batchId);
      }
      return null;
    }
    if (loaded.stage !== stage) {
      // This stage was committed by an earlier attempt that died before it scheduled the next one
      // or published its events: do both again (both are idempotent).
      if (loaded.stage)
        await host.scheduler.enqueueStage(messageId, loaded.stage, { background: loaded.batchId !== null });
      host.publish(await host.store.eventsAfter(messageId, 0));
      return null;
    }
    const mode = host.mode(loaded.mode);
    const remainingMs = mode.enforcesDeliberationCap
      ? host.options.deliberationCapMs - (host.now() - loaded.createdAt.getTime())
      : Number.POSITIVE_INFINITY;
    if (remainingMs <= 0) {
      await host.endAtCap(loaded);
      return null;
    }
    return new StageRun(host, stage, loaded, mode, carried, start !== undefined, remainingMs);
  }

  /** Whether a new conversation's first job may run from its start rather than a load. */
  private static trustsStart(host: StageRunHost, messageId: string, start: FirstStageStart): boolean {
    const storedAt = Date.parse(start.createdAt);
    return (
      Number.isFinite(storedAt) &&
      host.hearing.heardSinceTime(storedAt, START_CLOCK_SKEW_MS) &&
      !host.live.wasStopped(messageId)
    );
  }

  /**
   * The stage opens with its start events, 'started' for every call about to be made, and the
   * settle events of calls an earlier run of this stage already stored (no-ops when that run
   * delivered them: event keys are unique). A carried stage was opened by the previous commit.
   */
  private opening(): ModeEvent[] {
    if (this.carried) return [];
    const { stage, mode, ctx } = this;
    return [
      ...mode.startEvents(stage, ctx),
      ...this.calls.flatMap((call) => {
        const settledBefore = (this.chains.get(call.key) ?? [call]).flatMap((attempt) => {
          const outcome = this.stored.get(attempt.key);
          return outcome
            ? [settledEvent(stage, attempt, outcome), ...(mode.callEvents?.(stage, ctx, outcome) ?? [])]
            : [];
        });
        const next = this.firstToRun(call);
        return [...settledBefore, ...(next ? [progressEvent(stage, next, 'started')] : [])];
      }),
    ];
  }

  /**
   * Call: writes the opening and makes the stage's calls, each seat to its end, and the title
   * call beside them; resolves when every call has settled and been stored (the last with the
   * commit). A stage with nothing to call opens and commits in one transaction.
   */
  async call(): Promise<void> {
    const { host, messageId, stage, loaded, mode } = this;
    const opening = this.opening();
    if (this.toCall.length === 0) {
      await this.judge([], true);
      await this.commit(this.reduceWith([]), { leading: opening });
      return;
    }
    // The calls start while the opening is written: its round trip and commit are off the
    // stage's critical path. Everything else this run writes waits for it, so 'started' still
    // precedes every retry notice and settle event. While storage is away it is tried again and
    // the calls run on (their answers wait in memory, within StoreRetry's bounds); if it fails for
    // good, the calls are abandoned and the job fails (to be retried) rather than paying for
    // answers that could not be stored. A carried stage has no opening to write: its calls start
    // at once.
    const openingWrite: StageWrite = { stage, guard: true, markRunning: true, events: opening };
    this.opened = this.carried
      ? Promise.resolve()
      : host
          .durably(messageId, () => host.store.writeStage(messageId, openingWrite))
          .then(({ value: written }) => {
            if (written.kind === 'written') host.publish(written.events);
            // Ended (stopped) or moved on since it was loaded: a stop that came before these calls
            // were registered could not abort them, so they are abandoned here.
            else this.abandon.abort(new DeliberationStopped(STOPPED_CALL_ERROR.failed));
          });
    this.opened.catch((error: unknown) => this.abandon.abort(error));

    // A new conversation's title: its call runs beside the first stage that calls models, and its
    // outcome is stored with theirs (no job of its own loads and writes the message again).
    const titleCall = titleCallFor(loaded, mode, this.ctx, stage);
    this.titlePending = titleCall !== null;

    // The cap stops the deliberation the way a user's stop does: calls in flight are aborted at
    // once, their outcomes stored, and the stage's commit finds the message ended.
    const cap = Number.isFinite(this.remainingMs)
      ? setTimeout(() => void host.endAtCap(loaded), this.remainingMs)
      : null;
    // Decided from what is stored first, so a retried stage whose earlier run had decided cuts
    // the rest at once, without calling them.
    this.decide();
    // Measured from the stage's opening as stored: a retried job does not get a fresh deadline.
    // A stage opened by this job (or carried here) starts its clock now.
    const openedAt = this.carried ? null : (loaded.stageOpenedAt ?? null);
    const sinceOpened = openedAt ? Math.max(0, host.now() - openedAt.getTime()) : 0;
    const gate = this.gate;
    const deadline =
      gate?.deadlineMs != null && !this.cutReason
        ? setTimeout(
            () => {
              this.deadlinePassed = true;
              this.decide();
            },
            Math.max(0, gate.deadlineMs - sinceOpened),
          )
        : null;
    try {
      // allSettled semantics: callModel never rejects, one failure never cancels the others.
      await Promise.all([
        ...this.toCall.map((call) => this.runSeat(call)),
        ...(titleCall
          ? [
              (async () =>
                this.settler.submit({
                  call: titleCall,
                  title: true,
                  // Not abandoned with the stage: a conversation keeps its title after a stopped turn.
                  // Except when the stage ran from its job's start and its opening found the turn
                  // stopped or deleted before it began (a load would have made no call at all).
                  outcome: await this.callModel('title', titleCall, {
                    timeoutMs: host.options.titleTimeoutMs ?? 30_000,
                    silent: true,
                    ...(this.fromStart ? { abandon: this.abandon.signal } : {}),
                  }),
                }))(),
            ]
          : []),
      ]);
    } finally {
      if (cap) clearTimeout(cap);
      if (deadline) clearTimeout(deadline);
    }
  }

  /** Whether a single seat's answer is usable. */
  private accepts = (outcome: SuccessfulCall): boolean =>
    this.mode.accepts?.(this.stage, this.ctx, outcome) ?? true;

  private chainAt(outcomes: Map<string, CallOutcome>, call: PlannedCall): ChainState {
    return chainState(this.chains.get(call.key) ?? [call], (key) => outcomes.get(key), this.accepts);
  }

  /** A seat's next model, once `outcome` of one of its models is in (null: the seat is settled). */
  private nextAttempt(call: PlannedCall, outcome: CallOutcome): PlannedCall | null {
    const at = this.place.get(call.key);
    if (!at || at.call.fallbacks === undefined) return null;
    const outcomes = new Map(this.stored);
    outcomes.set(call.key, outcome);
    const state = this.chainAt(outcomes, at.call);
    return state.kind === 'next' ? (this.chains.get(at.call.key) ?? [])[state.index] : null;
  }

  /** The model of each seat that runs now: the first without a stored outcome; none when settled. */
  private firstToRun(call: PlannedCall): PlannedCall | null {
    const state = this.chainAt(this.stored, call);
    return state.kind === 'next' ? (this.chains.get(call.key) ?? [call])[state.index] : null;
  }

  private readonly eventsOf: SettledEvents = (call, outcome) => {
    const next = this.nextAttempt(call, outcome);
    return [
      settledEvent(this.stage, call, outcome),
      ...(this.mode.callEvents?.(this.stage, this.ctx, outcome) ?? []),
      // The seat passes to its next model: it starts as this one's failure is stored.
      ...(next ? [progressEvent(this.stage, next, 'started')] : []),
    ];
  };

  /** Every outcome of the stage's calls once `latest` are in, in the order they were stored. */
  private outcomesWith(latest: CallOutcome[]): CallOutcome[] {
    const settled = new Map(this.stored);
    for (const outcome of latest) settled.set(outcome.key, outcome);
    return [...settled.values()];
  }

  /**
   * The stage's reduction once `latest` are in. Reduce sees how long the deliberation has now run
   * (Delphi decides its next round by it), and the outcomes in plan order: a seat's final one in
   * its first call's place.
   */
  private reduceWith(latest: CallOutcome[]): StageReduction {
    const settled = new Map(this.outcomesWith(latest).map((o) => [o.key, o]));
    const attempts: Record<string, CallOutcome[]> = {};
    const outcomes = this.calls.map((call) => {
      if (!call.fallbacks) return settled.get(call.key) as CallOutcome;
      const state = this.chainAt(settled, call);
      if (state.attempts.length > 1) attempts[call.key] = state.attempts;
      // A seat still open here (an earlier run's outcome replaced this one's): its last stands.
      return state.kind === 'done' ? state.outcome : (state.attempts.at(-1) as CallOutcome);
    });
    const reduction = this.mode.reduce(
      this.stage,
      {
        ...this.ctx,
        elapsedMs: this.host.now() - this.loaded.createdAt.getTime(),
        ...(Object.keys(attempts).length > 0 ? { attempts } : {}),
      },
      outcomes,
    );
    // Issue 37: a graded turn's answers are graded here, once, and stored with their rows; the
    // model grader's from its judges' outcomes, made and stored before (judge).
    const { grading } = this.loaded;
    const rows = isModelGrading(grading)
      ? attachModelGrades(
          reduction.rows,
          judgeCallsFor(reduction.rows, grading, this.mode.facts, this.loaded.question),
          (key) => settled.get(key) ?? this.stored.get(key),
        )
      : gradeRows(reduction.rows, grading, this.mode.facts);
    return rows === reduction.rows ? reduction : { ...reduction, rows };
  }

  /**
   * The model grader's sub-step (issue 37, item 1), after the stage's last calls settled and
   * before its commit: the stage is reduced once `latest` are in, and every answer row's judges
   * are asked (model-grading.ts), each judge call an ordinary call of the stage, made here and
   * stored as the stage's seats' are (model_calls: tokens, cost, latency, so usage, budgets and
   * exports count it). A judge whose outcome an earlier run stored is not asked again: a retried
   * job pays for no judge twice. Nothing happens without a model grader.
   */
  private async judge(latest: CallOutcome[], waits: boolean): Promise<void> {
    const { grading } = this.loaded;
    if (!isModelGrading(grading)) return;
    const { host, messageId, stage } = this;
    const rows = this.reduceWith(latest).rows;
    const judged = judgeCallsFor(rows, grading, this.mode.facts, this.loaded.question);
    const calls = judgeCallsToMake(judged, (key) => this.stored.get(key));
    if (calls.length === 0) return;
    const timeoutMs = this.mode.timeoutMs(this.ctx.config);
    const outcomes = await Promise.all(
      calls.map((call) =>
        this.callModel(stage, call, { timeoutMs, silent: true, abandon: this.abandon.signal }),
      ),
    );
    try {
      const { saved } = await this.writeSettled(outcomes, () => ({ stage, events: [] }), waits);
      saved.forEach((outcome) => this.stored.set(outcome.key, outcome));
    } catch (error) {
      if (!(typeof error === 'object' && error !== null && host.lostAfterStoring.has(error)))
        host.unstored(
          messageId,
          outcomes.map((outcome) => ({ stage, outcome })),
        );
      throw error;
    }
  }

  /** The gate's decision, once it can be made: the members still running are cut. */
  private decide(): void {
    const gate = this.gate;
    if (!gate || this.cutReason) return;
    const storedCut = this.storedCut;
    this.cutReason = cutDecision(gate, {
      settled: this.settledMembers,
      pending: this.pending,
      deadlinePassed: this.deadlinePassed,
      storedCut: storedCut && !storedCut.ok ? storedCut.error : null,
    });
    if (!this.cutReason) return;
    for (const cutter of this.cutters.values()) cutter.abort(new DeliberationStopped(this.cutReason));
  }

  /** Runs one seat to its end: its first model without an outcome, then its fallbacks as needed. */
  private async runSeat(call: PlannedCall): Promise<void> {
    const chain = this.chains.get(call.key) ?? [call];
    let attempt = this.firstToRun(call) as PlannedCall;
    const timeoutMs = this.mode.timeoutMs(this.ctx.config);
    for (;;) {
      const cutter = new AbortController();
      this.cutters.set(attempt.key, cutter);
      const outcome = this.cutReason
        ? cutOutcome(attempt, this.cutReason)
        : await this.callModel(this.stage, attempt, {
            timeoutMs,
            after: this.opened,
            abandon: this.abandon.signal,
            cut: cutter.signal,
          });
      this.cutters.delete(attempt.key);
      const next = this.nextAttempt(attempt, outcome);
      if (!next) {
        this.pending -= 1;
        this.settledMembers.push(outcome);
        this.decide();
        await this.settler.submit({ call: attempt, outcome });
        return;
      }
      const saved = await this.settler.submit({ call: attempt, outcome, final: false });
      this.stored.set(attempt.key, saved);
      if (this.ended) {
        // The deliberation ended while this model failed: its next fallback is not asked.
        this.pending -= 1;
        return;
      }
      const state = this.chainAt(this.stored, call);
      if (state.kind === 'done') {
        // An earlier run of the stage stored an answer that settles the seat: commit with it.
        this.pending -= 1;
        await this.settler.submit({ call: attempt, outcome: saved });
        return;
      }
      attempt = chain[state.index];
    }
  }

  /** Makes one call; never rejects. The caller stores the outcome. */
  private async callModel(
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
    const { host, messageId } = this;
    const started = host.now();
    // Retry notices are stored without holding up the retry, but before the call's outcome is
    // handed back: a 'retrying' event must precede the call's settle event, and a deliberation
    // must not end while one is still on its way (it would then be dropped).
    let notices: Promise<void> = (options.after ?? Promise.resolve()).catch(() => undefined);
    let outcome: CallOutcome;
    const live = options.silent ? null : host.live.begin(messageId, stage, call);
    const untrack = host.live.track(messageId, stage, call);
    const deadline = callDeadline(options.timeoutMs, options.abandon, live?.signal, options.cut);
    try {
      const completion = await host.provider.complete({
        model: call.model,
        messages: call.messages,
        signal: deadline.signal,
        ...(live ? { onDelta: (text: string) => live.onDelta(text) } : {}),
        ...(this.ctx.expected !== undefined ? { expected: this.ctx.expected } : {}),
        onRetry: (notice) => {
          host.options.logCallError?.({
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
            .then(() => host.store.writeStage(messageId, { stage, events: [retrying] }))
            .then((written) => {
              if (written.kind === 'written') host.publish(written.events);
            })
            .catch((error: unknown) => {
              host.options.log?.(`could not store a retry notice: ${String(error)}`);
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
        responseTimeMs: host.now() - started,
        promptTokens: completion.usage?.promptTokens ?? null,
        completionTokens: completion.usage?.completionTokens ?? null,
        costUsd: completion.usage?.costUsd ?? null,
        simulated: completion.simulated,
        finishReason: completion.finishReason ?? null,
      };
    } catch (error) {
      const stopped: unknown = deadline.signal.aborted ? deadline.signal.reason : null;
      if (!(stopped instanceof DeliberationStopped)) {
        host.options.logCallError?.(callFailureDetail(stage, call.model, error));
      }
      outcome = {
        ok: false,
        key: call.key,
        model: call.model,
        error: stopped instanceof DeliberationStopped ? stopped.reason : describeCallError(error),
        responseTimeMs: host.now() - started,
      };
    } finally {
      deadline.dispose();
      live?.end();
      untrack();
    }
    await notices;
    return outcome;
  }

  /** Hands calls whose outcomes could not be stored to onUnstored, so their usage still counts. */
  private unstored(group: Settled[]): void {
    this.host.unstored(
      this.messageId,
      group.map((g) => ({ stage: g.title ? 'title' : this.stage, outcome: g.outcome })),
    );
  }

  /**
   * Settle: stores a group of calls that settled together in one transaction; the group that
   * settles the last seat together with the stage's commit (and the title, when it has settled by
   * then). A seat's model that fails while a fallback remains is stored on its own (`final:
   * false`): the seat is still open. Answers with the stored outcomes, in the group's order.
   */
  private async settle(group: Settled[]): Promise<CallOutcome[]> {
    if (this.gaveUp) {
      this.unstored(group);
      throw this.gaveUp.error;
    }
    // The answers wait here until stored, when they fit the process's bound (StoreRetry):
    // decided once, so a group that does not fit fails alone and the others wait on.
    const held = this.host.options.storeRetry?.held.hold(group.map((g) => g.outcome));
    const release = held?.release;
    try {
      return await this.storeGroup(group, held?.waits ?? true);
    } catch (error) {
      this.gaveUp ??= { error };
      this.abandon.abort(error);
      if (!(typeof error === 'object' && error !== null && this.host.lostAfterStoring.has(error)))
        this.unstored(group);
      throw error;
    } finally {
      release?.();
    }
  }

  /** Writes a settled group: the title alone, settled calls of a stage still running, or the commit. */
  private async storeGroup(group: Settled[], waits: boolean): Promise<CallOutcome[]> {
    const { host, messageId, stage } = this;
    await this.opened;
    // The time cap came while storage was away: its end is written first (see endAtCap).
    await host.capEnding(messageId)?.catch(() => undefined);
    const titleItem = group.find((g) => g.title);
    const own = group.filter((g) => !g.title);
    const title = titleItem ? titleFields(this.loaded, titleItem.outcome) : {};
    if (titleItem) this.titlePending = false;
    this.unsettled -= own.filter((g) => g.final !== false).length;
    let saved: CallOutcome[];
    if (own.length === 0) {
      // The title alone: the stage's calls are still running, or the stage has been committed.
      // Its failure is the title's, not the stage's: the end falls back to the question's words.
      await host
        .durably(messageId, () => host.store.writeStage(messageId, { stage, events: [], ...title }), waits)
        .catch((error: unknown) => {
          host.options.log?.(`could not store the title of ${messageId}: ${String(error)}`);
          if (titleItem) this.unstored([titleItem]);
        });
      saved = [];
    } else if (this.unsettled > 0) {
      const { written, saved: kept } = await this.writeSettled(
        own.map((s) => s.outcome),
        (outcomes) => ({
          stage,
          events: own.flatMap(({ call }, i) => this.eventsOf(call, outcomes[i])),
          ...title,
        }),
        waits,
      );
      if (written.kind === 'written') host.publish(written.events);
      // The message had ended or moved past the stage: only the outcomes were stored.
      else this.ended = true;
      saved = kept;
      saved.forEach((outcome) => this.stored.set(outcome.key, outcome));
    } else {
      await this.judge(
        own.map((g) => g.outcome),
        waits,
      );
      saved = await this.commit(this.reduceWith(own.map((g) => g.outcome)), {
        last: own,
        title,
        titleStored: titleItem?.outcome ?? this.titleStored,
        titlePending: this.titlePending,
        waits,
      });
    }
    if (titleItem) this.titleStored = titleItem.outcome;
    let next = 0;
    return group.map((g) => (g.title ? g.outcome : saved[next++]));
  }

  /**
   * Writes a stage together with the outcomes of calls that settled. When an earlier run stored some
   * of them first, conclave_stage_write stores the rest, writes nothing else and answers with the
   * stored ones: the write is built again from those and sent without outcomes. Returns the answer
   * of the write that was applied and the outcomes that stand.
   */
  private async writeSettled(
    outcomes: CallOutcome[],
    build: (outcomes: CallOutcome[]) => StageWrite,
    waits: boolean,
  ): Promise<{
    written: Exclude<StageWriteResult, { kind: 'replaced' }>;
    saved: CallOutcome[];
    /** The storage error a write met before it went through (it may have been applied then). */
    failed: unknown;
  }> {
    const { host, messageId } = this;
    const write = { ...build(outcomes), outcomes };
    const first = await host.durably(messageId, () => host.store.writeStage(messageId, write), waits);
    if (first.value.kind !== 'replaced')
      return { written: first.value, saved: outcomes, failed: first.failed };
    const stored = first.value.outcomes;
    const rewrite = build(stored);
    const again = await host.durably(messageId, () => host.store.writeStage(messageId, rewrite), waits);
    if (again.value.kind === 'replaced') throw new Error('a stage write without outcomes answered replaced');
    return { written: again.value, saved: stored, failed: first.failed ?? again.failed };
  }

  /**
   * Commit: stores the outcomes of the calls that settled last, the stage's rows and events, and
   * moves the message on (opening the next stage), in one round trip; then `next`. When an earlier
   * run stored some of the last outcomes first, the stage is reduced from the stored ones. Returns
   * the stored outcomes of `closing.last`.
   */
  private async commit(reduction: StageReduction, closing: Closing = {}): Promise<CallOutcome[]> {
    const { host, messageId, stage, loaded, mode } = this;
    const { question, needsTitle } = loaded;
    const last = closing.last ?? [];
    // Before the write: a title write elsewhere waits for the row lock this one holds. A title
    // known to be stored (loaded, carried, or stored by this job) needs no wait, and one still
    // running in this very job cannot be waited for here (its write queues behind this one).
    const titleKnown =
      (loaded.outcomes.title?.length ?? 0) > 0 ||
      Boolean(closing.titleStored) ||
      closing.titlePending === true;
    if (reduction.transition.kind === 'done' && needsTitle && !titleKnown)
      await awaitTitle(host.store, messageId, host.options.titleGraceMs ?? 5000, host.now);
    const mine = last.map((s) => s.outcome);
    let committed = reduction;
    let next: NextOpening | null = null;
    const { written, saved, failed } = await this.writeSettled(
      mine,
      (outcomes) => {
        // Built again from the stored outcomes when an earlier run's stand in for these.
        if (outcomes !== mine) committed = this.reduceWith(outcomes);
        const { rows, events, transition } = committed;
        // Moving on: the next stage opens in this same commit (its start and 'started' events),
        // and the write answers with what it stored, for the next stage to run from.
        next = openNext(
          this.clock(),
          loaded,
          mode,
          stage,
          committed,
          this.outcomesWith(outcomes),
          closing.titleStored,
        );
        return {
          stage,
          guard: true,
          rows,
          events: [
            ...(closing.leading ?? []),
            ...last.flatMap(({ call }, i) => this.eventsOf(call, outcomes[i])),
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
      // a batch's item lets the batch move on (see open).
      if (failed !== null) {
        // 'skipped' comes after the outcomes are stored (or answered 'replaced' with them).
        if (written.kind === 'skipped' && typeof failed === 'object') host.lostAfterStoring.add(failed);
        throw failed;
      }
      return saved;
    }
    await this.next(committed, written, next);
    return saved;
  }

  /**
   * Next: after a written commit, publishes its events; moving on, carries the next stage here
   * from what the write answered it stored and enqueues its job; at the end, lets a batch move on.
   */
  private async next(
    committed: StageReduction,
    written: Extract<StageWriteResult, { kind: 'written' }>,
    opened: NextOpening | null,
  ): Promise<void> {
    const { host, messageId, loaded } = this;
    const delivered = written.events;
    if (delivered.length > 0) host.publish(delivered);
    const { transition } = committed;
    if (transition.kind === 'next') {
      // Before the enqueue, so that a job of the next stage taken here finds it.
      const carried = opened && carryNext(this.clock(), loaded, this.mode, opened, written.stored);
      if (carried) host.carried.carry(messageId, carried);
      await host.scheduler.enqueueStage(messageId, transition.stage, { background: loaded.batchId !== null });
    } else if (delivered.length > 0) {
      await host.finished(messageId, loaded.batchId);
    }
  }

  private clock() {
    const { now, hearing, options } = this.host;
    return { now, hearing, deliberationCapMs: options.deliberationCapMs, log: options.log };
  }
}
