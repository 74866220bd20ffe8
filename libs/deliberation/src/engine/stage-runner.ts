import type { DeliveredEvent } from '@conclave/contracts';
import { ModelCallError, type ModelProvider } from '@conclave/llm';
import { modeDefinition } from '../modes';
import { failure } from './reductions';
import { cleanTitle, fallbackTitle } from '../shared/title';
import type {
  AnyModeDefinition,
  CallOutcome,
  DeliberationContext,
  DeliberationStore,
  EventPublisher,
  LoadedDeliberation,
  ModeEvent,
  PlannedCall,
  StageReduction,
  StageScheduler,
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
  /** Called once a deliberation has ended (complete, failed), e.g. to start the next batch item. */
  onFinished?: (messageId: string) => Promise<void>;
}

const TERMINAL = new Set(['complete', 'failed', 'cancelled']);

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

/** A short reason a user can act on, without stack traces or secrets. */
export function describeCallError(error: unknown): string {
  if (error instanceof ModelCallError) {
    if (error.kind === 'timeout') return 'timed out';
    return error.message;
  }
  return 'unexpected provider error';
}

/**
 * Runs one stage of one deliberation. Safe to run twice for the same stage: model outcomes are
 * stored as each call settles and reused, and the stage is committed at most once under the
 * message's row lock.
 */
export class StageRunner {
  private readonly now: () => number;

  constructor(
    private readonly store: DeliberationStore,
    private readonly provider: ModelProvider,
    private readonly publisher: EventPublisher,
    private readonly scheduler: StageScheduler,
    private readonly options: StageRunnerOptions,
  ) {
    this.now = options.now ?? Date.now;
  }

  /** Runs one stage; resolves with the mode when it ran model calls, null when there was nothing to run. */
  async runStage(messageId: string, stage: string): Promise<{ mode: string } | null> {
    const loaded = await this.store.load(messageId, this.options.historyTurns);
    if (!loaded || TERMINAL.has(loaded.status)) return null;
    if (loaded.stage !== stage) {
      // This stage was committed by an earlier attempt that died before it scheduled the next one
      // or published its events: do both again (both are idempotent).
      if (loaded.stage)
        await this.scheduler.enqueueStage(messageId, loaded.stage, { background: loaded.batchId !== null });
      await this.publish(await this.store.eventsAfter(messageId, 0));
      return null;
    }
    const mode = this.mode(loaded);
    const ctx = contextOf(loaded, this.now(), this.options.deliberationCapMs);
    const remainingMs = mode.enforcesDeliberationCap
      ? this.options.deliberationCapMs - (this.now() - loaded.createdAt.getTime())
      : Number.POSITIVE_INFINITY;
    if (remainingMs <= 0) {
      const seconds = Math.round(this.options.deliberationCapMs / 1000);
      const message = `The deliberation ran past its ${seconds} s limit and was stopped.`;
      await this.commit(loaded, stage, failure(message));
      return null;
    }

    await this.emit(messageId, mode.startEvents(stage, ctx), { stage, markRunning: true });
    const outcomes = await this.callAll(messageId, stage, mode.plan(stage, ctx), {
      timeoutMs: Math.min(mode.timeoutMs(ctx.config), remainingMs),
      callEvents: mode.callEvents ? (outcome) => mode.callEvents?.(stage, ctx, outcome) ?? [] : undefined,
    });
    // Reduce sees how long the deliberation has now run (Delphi decides its next round by it).
    const elapsedMs = this.now() - loaded.createdAt.getTime();
    await this.commit(loaded, stage, mode.reduce(stage, { ...ctx, elapsedMs }, outcomes));
    return { mode: loaded.mode };
  }

  /** Runs beside the first stage; whichever of title and pipeline finishes last does not wait. */
  async generateTitle(messageId: string): Promise<void> {
    const loaded = await this.store.load(messageId, 0);
    if (!loaded || !loaded.needsTitle) return;
    const mode = this.mode(loaded);
    const call = mode.titleCall(contextOf(loaded, this.now(), this.options.deliberationCapMs));
    const [outcome] = await this.callAll(
      messageId,
      'title',
      [{ key: 'title', participant: call.model, model: call.model, messages: call.messages }],
      { timeoutMs: this.options.titleTimeoutMs ?? 30_000, silent: true },
    );
    const title = (outcome.ok ? cleanTitle(outcome.content) : null) ?? fallbackTitle(loaded.question);
    await this.store.withMessageLock(messageId, (tx) => tx.setTitleIfUnset(title));
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
    const events = await this.store.withMessageLock(messageId, async (tx) => {
      if (TERMINAL.has(tx.message.status)) return [];
      await tx.update({ status: 'failed', stage: null, error: reason, completed: true });
      return tx.appendEvents([{ key: 'error', type: 'error', payload: { message: reason } }]);
    });
    if (events) await this.publish(events);
    if (events && events.length > 0) await this.finished(messageId);
  }

  /**
   * Events are stored before they are published, and subscribers catch up from the store, so a
   * failed publish delays delivery but loses nothing: it must not fail the stage.
   */
  private async publish(events: DeliveredEvent[]): Promise<void> {
    try {
      await this.publisher.publish(events);
    } catch (error) {
      this.options.log?.(`could not publish ${events.length} event(s): ${String(error)}`);
    }
  }

  /** The title call runs beside the pipeline; give one still in flight a short grace period. */
  private async awaitTitle(messageId: string): Promise<void> {
    const deadline = this.now() + (this.options.titleGraceMs ?? 5000);
    while (this.now() < deadline) {
      if ((await this.store.loadOutcomes(messageId, 'title')).length > 0) {
        // the title job stores its outcome, then the title, in two steps
        await new Promise((resolve) => setTimeout(resolve, 50));
        return;
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  private mode(loaded: LoadedDeliberation): AnyModeDefinition {
    const mode = modeDefinition(loaded.mode);
    if (!mode) throw new Error(`mode ${loaded.mode} is not available`);
    return mode;
  }

  private async emit(
    messageId: string,
    events: ModeEvent[],
    guard?: { stage: string; markRunning?: boolean },
  ): Promise<void> {
    const delivered = await this.store.withMessageLock(messageId, async (tx) => {
      if (TERMINAL.has(tx.message.status)) return [];
      if (guard && tx.message.stage !== guard.stage) return [];
      if (guard?.markRunning && tx.message.status === 'queued') await tx.update({ status: 'running' });
      return tx.appendEvents(events);
    });
    if (delivered && delivered.length > 0) await this.publish(delivered);
  }

  private async callAll(
    messageId: string,
    stage: string,
    calls: PlannedCall[],
    options: { timeoutMs: number; silent?: boolean; callEvents?: (outcome: CallOutcome) => ModeEvent[] },
  ): Promise<CallOutcome[]> {
    const stored = new Map((await this.store.loadOutcomes(messageId, stage)).map((o) => [o.key, o]));
    // allSettled semantics: callOne never rejects, one failure never cancels the others.
    return Promise.all(
      calls.map(async (call) => {
        const outcome = stored.get(call.key) ?? (await this.callOne(messageId, stage, call, options));
        if (!options.silent) {
          // Also for a stored outcome: a worker that died right after storing it may not have
          // delivered these events; event keys make a second delivery a no-op.
          const settled = outcome.ok
            ? progressEvent(stage, call, 'succeeded', { responseTimeMs: outcome.responseTimeMs })
            : progressEvent(stage, call, 'failed', {
                responseTimeMs: outcome.responseTimeMs,
                error: outcome.error,
              });
          await this.emit(messageId, [settled, ...(options.callEvents?.(outcome) ?? [])]);
        }
        return outcome;
      }),
    );
  }

  private async callOne(
    messageId: string,
    stage: string,
    call: PlannedCall,
    options: { timeoutMs: number; silent?: boolean },
  ): Promise<CallOutcome> {
    const report = (event: ModeEvent) => (options.silent ? Promise.resolve() : this.emit(messageId, [event]));
    await report(progressEvent(stage, call, 'started'));
    const started = this.now();
    let outcome: CallOutcome;
    try {
      const completion = await this.provider.complete({
        model: call.model,
        messages: call.messages,
        signal: AbortSignal.timeout(options.timeoutMs),
        onRetry: (notice) => {
          const retrying = progressEvent(
            stage,
            call,
            'retrying',
            { error: notice.reason },
            `:${notice.attempt}`,
          );
          void report(retrying).catch(() => undefined);
        },
      });
      outcome = {
        ok: true,
        key: call.key,
        model: call.model,
        // PostgreSQL text cannot hold NUL; a model that emits one must not fail the stage.
        content: completion.content.replaceAll('\u0000', ''),
        servedModel: completion.servedModel,
        responseTimeMs: this.now() - started,
        promptTokens: completion.usage?.promptTokens ?? null,
        completionTokens: completion.usage?.completionTokens ?? null,
        costUsd: completion.usage?.costUsd ?? null,
        simulated: completion.simulated,
      };
    } catch (error) {
      outcome = {
        ok: false,
        key: call.key,
        model: call.model,
        error: describeCallError(error),
        responseTimeMs: this.now() - started,
      };
    }
    return this.store.saveOutcome(messageId, stage, outcome);
  }

  private async commit(loaded: LoadedDeliberation, stage: string, reduction: StageReduction): Promise<void> {
    const { messageId, question } = loaded;
    const { transition } = reduction;
    if (transition.kind === 'done' && loaded.needsTitle) await this.awaitTitle(messageId);
    const delivered: DeliveredEvent[] | null = await this.store.withMessageLock(messageId, async (tx) => {
      if (TERMINAL.has(tx.message.status) || tx.message.stage !== stage) return [];
      await tx.insertRows(reduction.rows);
      const events = [...reduction.events];
      if (transition.kind === 'next') {
        await tx.update({ status: 'running', stage: transition.stage });
      } else if (transition.kind === 'done') {
        if (tx.message.needsTitle) {
          const title = await tx.setTitleIfUnset(fallbackTitle(question));
          events.push({ key: 'title_complete', type: 'title_complete', payload: { data: { title } } });
        }
        events.push({ key: 'complete', type: 'complete', payload: {} });
        await tx.update({ status: 'complete', stage: null, content: transition.content, completed: true });
      } else {
        events.push({ key: 'error', type: 'error', payload: { message: transition.message } });
        await tx.update({ status: 'failed', stage: null, error: transition.message, completed: true });
      }
      return tx.appendEvents(events);
    });
    if (delivered && delivered.length > 0) await this.publish(delivered);
    if (transition.kind === 'next') {
      await this.scheduler.enqueueStage(messageId, transition.stage, { background: loaded.batchId !== null });
    } else if (delivered && delivered.length > 0) {
      await this.finished(messageId);
    }
  }

  private async finished(messageId: string): Promise<void> {
    try {
      await this.options.onFinished?.(messageId);
    } catch (error) {
      // the reconciler dispatches a batch's next items if this is lost
      this.options.log?.(`after ${messageId} finished: ${String(error)}`);
    }
  }
}
