import {
  isTerminalStatus,
  type DeliveredEvent,
  type FirstStageStart,
  type ModeName,
} from '@conclave/contracts';
import type { ModelProvider } from '@conclave/llm';
import { CarriedStages } from './carried-stages';
import { endRun, STOPPED_CALL_ERROR, type DeliberationEnd } from './ending';
import { writeThroughOutage } from './held-outcomes';
import { LiveCalls } from './live-calls';
import { StageRun, type StageRunHost, type StageRunnerOptions } from './stage-run';
import { StopHearing } from './stop-hearing';
import type {
  AnyModeDefinition,
  CallOutcome,
  DeliberationStore,
  EventPublisher,
  LoadedDeliberation,
  ModeRegistry,
  StageScheduler,
  StageWriteResult,
} from './types';

export { callDeadline, describeCallError, type CallFailureDetail } from './model-call';
export { loadedFromStart, START_CLOCK_SKEW_MS, type StageRunnerOptions } from './stage-run';

/**
 * Runs the stages of deliberations in this process: each stage job is a StageRun (stage-run.ts:
 * open, call, settle, commit, next); this holds what they share (the calls in flight here, the
 * next stages carried here, storage retries) and ends deliberations from outside their stages (a
 * user's stop, the time cap, a job that failed for good).
 */
export class StageRunner {
  private readonly now: () => number;
  private readonly live: LiveCalls;
  private readonly hearing: StopHearing;
  /** Next stages this process committed the way to, by message (see Carried). */
  private readonly carried: CarriedStages;
  /**
   * Endings at the time cap whose write waits for storage, by message: the writes of the stage's
   * calls (aborted by the cap) wait for them, so that the commit finds the message ended.
   */
  private readonly capEndings = new Map<string, Promise<unknown>>();
  /** What each stage job uses of this process. */
  private readonly host: StageRunHost;

  constructor(
    /** The modes it can run, handed in: the engine knows no mode itself. */
    private readonly modes: ModeRegistry,
    private readonly store: DeliberationStore,
    provider: ModelProvider,
    private readonly publisher: EventPublisher,
    scheduler: StageScheduler,
    private readonly options: StageRunnerOptions,
  ) {
    this.now = options.now ?? Date.now;
    this.live = options.live ?? new LiveCalls(null);
    this.hearing = options.hearing ?? new StopHearing();
    this.carried = new CarriedStages(this.now, this.hearing, this.live);
    this.host = {
      store,
      provider,
      scheduler,
      options,
      now: this.now,
      live: this.live,
      hearing: this.hearing,
      carried: this.carried,
      lostAfterStoring: new WeakSet<object>(),
      mode: (name) => this.mode(name),
      capEnding: (messageId) => this.capEndings.get(messageId),
      endAtCap: (loaded) => this.endAtCap(loaded),
      publish: (events) => this.publish(events),
      finished: (messageId, batchId) => this.finished(messageId, batchId),
      durably: (messageId, write, waits) => this.durably(messageId, write, waits),
      unstored: (messageId, calls) => this.unstored(messageId, calls),
    };
  }

  /**
   * Runs one stage (StageRun: open, then call, which settles, commits and moves on); resolves with
   * the mode when it ran model calls, null when there was nothing to run. `firstStart`: this is
   * the first start of the stage's job (a stage carried here from the previous commit, or a new
   * conversation's start, runs without a load); a job started again always loads.
   */
  async runStage(
    messageId: string,
    stage: string,
    options: { firstStart?: boolean; start?: FirstStageStart } = {},
  ): Promise<{ mode: string } | null> {
    const run = await StageRun.open(this.host, messageId, stage, options);
    if (!run) return null;
    await run.call();
    return { mode: run.modeName };
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
    const written = await endRun(this.store, messageId, stage, end);
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
    const ending = this.durably(messageId, () => endRun(this.store, messageId, stage, end));
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

  private mode(name: ModeName): AnyModeDefinition {
    const mode = this.modes(name);
    if (!mode) throw new Error(`mode ${name} is not available`);
    return mode;
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

  private async finished(messageId: string, batchId: string | null): Promise<void> {
    try {
      await this.options.onFinished?.(messageId, batchId);
    } catch (error) {
      // the reconciler dispatches a batch's next items if this is lost
      this.options.log?.(`after ${messageId} finished: ${String(error)}`);
    }
  }
}
