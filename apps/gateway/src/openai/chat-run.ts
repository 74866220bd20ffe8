import type { Logger } from '@nestjs/common';
import type { ConclaveConfig } from '@conclave/config';
import type { DeliberationView, DeliveredEvent, LiveEvent, ModeName } from '@conclave/contracts';
import { modeFacts } from '@conclave/deliberation';
import { finalTextOf } from '@conclave/outcomes';
import type { Response } from 'express';
import { ApiError } from '../common/api-error';
import type { CancelService } from '../deliberations/cancel.service';
import type { DeliberationsService } from '../deliberations/deliberations.service';
import type { EventHub } from '../events/event-hub';
import type { LiveHub, LiveWatcher } from '../events/live-hub';
import type { OrderedDelivery } from '../events/ordered-delivery';
import type { Outflow } from '../events/outflow';
import { responseOutflow, startSse } from '../events/sse';
import type { CloseReason, LiveStream } from '../events/stream-registry';
import {
  chatCompletion,
  chunk,
  completionId,
  degradedNote,
  conclaveInfo,
  DONE,
  sse,
  usageChunk,
  webLink,
  withNote,
  type ChunkBase,
} from './completions';
import type { EarlierTurns } from './deliberation-plan';
import { errorObject, type OpenAiErrorSpec } from './errors';
import { LiveFinalText } from './live-final-text';
import { ProgressLines } from './progress-lines';
import { sendOpenAiError } from './openai-error.filter';
import type { RetryAttachment } from './retry-grace';

export interface ChatRunDeps {
  deliberations: DeliberationsService;
  cancels: CancelService;
  hub: EventHub;
  live: LiveHub;
  config: ConclaveConfig;
  logger: Logger;
}

export interface ChatRunContext {
  userId: string;
  messageId: string;
  mode: ModeName;
  /** The model id as the client sent it. */
  model: string;
  preset: string | null;
  /** Where the web client is (for the deliberation's link); null when unknown. */
  base: string | null;
  earlierTurns: EarlierTurns;
  includeUsage: boolean;
  /** The place this request holds among the user's streams (released when it ends). */
  stream: LiveStream;
  /**
   * With an Idempotency-Key (and a grace): the run outlives this client for V1_RETRY_GRACE_MS, for a
   * retry to reattach. Null: the client going away cancels the run at once.
   */
  retry: RetryAttachment | null;
}

/**
 * Why a deliberation gave no final text, as an OpenAI error. Failed: 502 (the panel's models did
 * not produce it; the message says which part failed). Cancelled: 409.
 */
export function endedWithoutAnswer(view: DeliberationView, link: string | null): OpenAiErrorSpec {
  const where = `deliberation ${view.messageId}${link ? `, ${link}` : ''}`;
  const kept = keptNote(view);
  if (view.status === 'cancelled') {
    return {
      status: 409,
      message: `The deliberation was cancelled before it finished (${where})${view.error ? `: ${view.error}` : '.'}${kept}`,
      type: 'invalid_request_error',
      param: null,
      code: 'deliberation_cancelled',
    };
  }
  const why =
    view.status === 'complete'
      ? 'it ended without the final text of its mode'
      : (view.error ?? 'the panel could not produce an answer');
  return {
    status: 502,
    message: `The deliberation failed and gave no answer (${where}): ${why}${kept}`,
    type: 'server_error',
    param: null,
    code: 'deliberation_failed',
  };
}

/**
 * What an ended run without its final text kept, for its error message: the finished answers are
 * in the error body's `conclave.kept` and the deliberation, never presented as the answer.
 */
function keptNote(view: DeliberationView): string {
  const answers = view.partial?.answers.length ?? 0;
  const degraded = view.degraded ? ` ${view.degraded.summary}.` : '';
  if (answers === 0) return degraded;
  const stage = view.partial ? ` of stage ${view.partial.stage}` : '';
  return (
    `${degraded} ${answers} finished answer${answers === 1 ? '' : 's'}${stage} ${answers === 1 ? 'is' : 'are'} kept ` +
    '(not a final answer): see `conclave.kept` in this error or the deliberation.'
  );
}

const LOST: OpenAiErrorSpec = {
  status: 503,
  message:
    'The gateway lost track of the deliberation; it may still finish: see it in the web client or GET /api/deliberations/:id.',
  type: 'server_error',
  param: null,
  code: 'service_unavailable',
};

/**
 * One /v1/chat/completions request from the deliberation's start (or its retry's reattaching) to its
 * answer: it follows the deliberation's events from the first (EventHub) and, streaming, the final
 * stage's text as it is written (LiveHub). When the client goes away before the end it cancels the
 * deliberation, or, with an Idempotency-Key, leaves it its grace (RetryAttachment).
 */
export class ChatRun {
  private done = false;
  private delivery: OrderedDelivery | null = null;
  private watcher: LiveWatcher | null = null;
  private stopHeartbeat: (() => void) | null = null;
  private outflow: Outflow | null = null;
  private readonly progress: ProgressLines;
  private readonly base: ChunkBase;

  constructor(
    private readonly deps: ChatRunDeps,
    private readonly ctx: ChatRunContext,
    private readonly response: Response,
  ) {
    this.progress = new ProgressLines(ctx.mode);
    this.base = {
      id: completionId(ctx.messageId),
      created: Math.floor(Date.now() / 1000),
      model: ctx.model,
      includeUsage: ctx.includeUsage,
    };
  }

  /** The stream registry closes the request (its key revoked, a client that does not read). */
  close(reason: CloseReason): void {
    if (this.done) return;
    // A revoked key cannot retry: nothing to wait for.
    this.abandon(reason === 'revoked');
    if (reason === 'slow' || this.response.writableEnded) {
      this.response.destroy();
      return;
    }
    const revoked: OpenAiErrorSpec = {
      status: 401,
      message: 'The API key was revoked.',
      type: 'invalid_request_error',
      param: null,
      code: 'invalid_api_key',
    };
    if (this.response.headersSent) this.response.end(sse({ error: errorObject(revoked) }));
    else sendOpenAiError(this.response, revoked);
  }

  /** Without `stream`: waits for the end, then answers the chat.completion (or the error). */
  answerWhenDone(): void {
    let reasoning = '';
    this.watchDisconnect();
    if (this.done) return;
    this.delivery = this.deps.hub.subscribe(
      this.ctx.messageId,
      0,
      (event) => {
        reasoning += this.lines(event);
      },
      (reason) => void this.settle(reason, (view) => this.answer(view, reasoning)),
    );
  }

  /** With `stream: true`: the role chunk at once, progress as reasoning, the final text as it is written. */
  stream(): void {
    const { response } = this;
    this.stopHeartbeat = startSse(response, ': keep-alive\n\n');
    this.write(chunk(this.base, { role: 'assistant', content: '' }));
    this.outflow = responseOutflow(response, this.deps.config.streams, () =>
      this.ctx.stream.close('slow', 'the client does not read'),
    );
    const outflow = this.outflow;
    this.watchDisconnect();
    if (this.done) return;
    const final = modeFacts(this.ctx.mode)?.finalStage ?? null;
    const text = new LiveFinalText();
    const delivery = this.deps.hub.subscribe(
      this.ctx.messageId,
      0,
      (event) => {
        // Deltas are asked for once the final stage starts: the earlier stages' are not sent on.
        if (final && !this.watcher && event.type === final.startEvent) {
          this.watcher = this.deps.live.watcher(
            this.ctx.messageId,
            (live: LiveEvent) => {
              if (live.stage !== final.stage) return;
              const piece = text.add(live.type === 'model_delta' ? live.offset : 0, live.text);
              if (piece) this.write(chunk(this.base, { content: piece }));
            },
            () => outflow.room(),
          );
          this.watcher.follow(delivery);
        }
        this.watcher?.beforeDelivery(event);
        const lines = this.lines(event);
        if (lines) this.write(chunk(this.base, { reasoning_content: lines }));
        this.watcher?.delivered(event);
      },
      (reason) => void this.settle(reason, (view) => this.finishStream(view, text)),
      () => outflow.room(),
    );
    this.delivery = delivery;
  }

  private lines(event: DeliveredEvent): string {
    try {
      return this.progress.linesFor(event).join('');
    } catch (error) {
      // A line is a courtesy: an event it cannot describe must not stop the delivery.
      this.deps.logger.warn(`no progress line for ${event.type}: ${String(error)}`);
      return '';
    }
  }

  private write(payload: unknown): void {
    if (!this.response.writableEnded && !this.response.destroyed) this.response.write(sse(payload));
  }

  /** The client going away before the answer cancels the deliberation (or starts its grace). */
  private watchDisconnect(): void {
    this.response.on('close', () => {
      if (!this.done) this.abandon();
    });
    // It may have gone while the deliberation was being started.
    if (this.response.req.socket.destroyed) this.abandon();
  }

  /**
   * Stops following; cancels the deliberation (unless it has ended meanwhile), or with a retry
   * attachment and not `now`, leaves it its grace.
   */
  private abandon(now = false): void {
    if (this.done) return;
    this.stopFollowing();
    if (this.ctx.retry && !now) {
      this.ctx.retry.detach();
      return;
    }
    this.ctx.retry?.end();
    this.deps.cancels.cancel(this.ctx.userId, this.ctx.messageId).catch((error: unknown) => {
      // Already ended (409) or gone (404): nothing to cancel.
      if (error instanceof ApiError) return;
      this.deps.logger.warn(`could not cancel ${this.ctx.messageId} after its client left: ${String(error)}`);
    });
  }

  private stopFollowing(): void {
    this.done = true;
    this.stopHeartbeat?.();
    this.outflow?.stop();
    this.watcher?.close();
    this.delivery?.close();
    this.ctx.stream.release();
  }

  /** The delivery ended: read the stored deliberation and answer from it. */
  private async settle(
    reason: 'terminal' | 'closed' | 'failed',
    answer: (view: DeliberationView | null) => void,
  ): Promise<void> {
    if (this.done) return;
    this.stopFollowing();
    // Ended, or not followed any more because this gateway lost its events: either way the run is
    // no longer this client's to abandon, so no grace runs out on it (the answer says it may still
    // finish, and a retry with the key reattaches as to any run).
    this.ctx.retry?.end();
    let view: DeliberationView | null = null;
    if (reason === 'terminal') {
      try {
        view = await this.deps.deliberations.view(this.ctx.userId, this.ctx.messageId);
      } catch (error) {
        if (!(error instanceof ApiError))
          this.deps.logger.warn(`could not read ${this.ctx.messageId}: ${String(error)}`);
      }
    }
    if (this.response.destroyed || this.response.writableEnded) return;
    answer(view);
  }

  private outcome(view: DeliberationView | null): { text: string } | { error: OpenAiErrorSpec } {
    if (!view) return { error: LOST };
    const text = view.status === 'complete' ? finalTextOf(view) : null;
    if (text !== null) return { text };
    return {
      error: {
        ...endedWithoutAnswer(view, webLink(this.ctx.base, this.ctx.messageId)),
        conclave: this.info(view),
      },
    };
  }

  private info(view: DeliberationView) {
    return conclaveInfo(view, {
      preset: this.ctx.preset,
      base: this.ctx.base,
      earlierTurns: this.ctx.earlierTurns,
    });
  }

  private answer(view: DeliberationView | null, reasoning: string): void {
    const outcome = this.outcome(view);
    if ('error' in outcome || !view) {
      sendOpenAiError(this.response, 'error' in outcome ? outcome.error : LOST);
      return;
    }
    this.response
      .status(200)
      .json(chatCompletion(view, this.ctx.model, outcome.text, reasoning, this.info(view)));
  }

  private finishStream(view: DeliberationView | null, text: LiveFinalText): void {
    const outcome = this.outcome(view);
    if ('error' in outcome || !view) {
      // Mid-stream, an error is a `data:` line with OpenAI's error object (the SDKs raise it).
      const spec = 'error' in outcome ? outcome.error : LOST;
      this.write({ error: errorObject(spec), ...(spec.conclave ? { conclave: spec.conclave } : {}) });
      this.response.end(DONE);
      return;
    }
    const { rest, restarted } = text.finish(outcome.text);
    if (restarted) {
      this.deps.logger.warn(`${this.ctx.messageId}: the live text was not the start of the stored one`);
    }
    if (rest) this.write(chunk(this.base, { content: rest }));
    const note = degradedNote(view);
    if (note) this.write(chunk(this.base, { reasoning_content: `${note}\n`, content: withNote('', note) }));
    this.write(chunk(this.base, {}, { reason: 'stop', conclave: this.info(view) }));
    if (this.ctx.includeUsage) this.write(usageChunk(this.base, view.usage));
    this.response.end(DONE);
  }
}
