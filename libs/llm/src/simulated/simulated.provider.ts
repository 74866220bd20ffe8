import {
  ModelCallError,
  type ChatMessage,
  type Completion,
  type CompletionRequest,
  type ModelProvider,
} from '../provider';
import { modelCallErrorFromAbort } from '../retry';
import { delayFor, faultFor, heavyFor, heavyTailedLatency, parseSimModel } from './directives';
import { hashString, seededRandom } from './random';

export interface SimulationContext {
  model: string;
  persona: string;
  flags: string[];
  messages: ChatMessage[];
  /** The last user message: the prompt the responder answers. */
  prompt: string;
  random: () => number;
  seed: string;
  /** The item's expected answer in a graded run (CompletionRequest.expected); absent otherwise. */
  expected?: string;
}

/** Knows one prompt format (a mode's ranking prompt, the title prompt, ...) and answers in it. */
export interface SimulatedResponder {
  kind: string;
  matches(prompt: string): boolean;
  respond(ctx: SimulationContext): string;
}

export interface SimulatedProviderOptions {
  responders: SimulatedResponder[];
  fallback: SimulatedResponder;
  latencyMs: number;
  /** Each call takes latencyMs × (1 ± latencyJitter); 0 makes every call take exactly latencyMs. Default 0.5. */
  latencyJitter?: number;
  /**
   * The pace of a streamed answer (a request with onDelta): it is written in this many pieces,
   * spread evenly over the call's latency, so a stream takes as long as an answer given whole.
   * Default 20.
   */
  streamPieces?: number;
  seed: string;
}

const SPACE = /\s/;

/**
 * `content` cut into at most `pieces` runs of whole words (each keeps its trailing space; leading
 * space is a word of its own). Slices of `content` at word starts, not words joined again: every
 * streamed call of the simulated provider cuts its answer.
 */
export function streamPiecesOf(content: string, pieces: number): string[] {
  if (content === '') return [];
  // Where each word starts: 0, then every non-space that follows a space.
  const starts = [0];
  let wasSpace = SPACE.test(content[0]);
  for (let i = 1; i < content.length; i++) {
    const space = SPACE.test(content[i]);
    if (!space && wasSpace) starts.push(i);
    wasSpace = space;
  }
  const words = starts.length;
  const count = Math.max(1, Math.min(pieces, words));
  const startOf = (word: number) => (word >= words ? content.length : starts[word]);
  const out: string[] = [];
  for (let i = 0; i < count; i++) {
    out.push(
      content.slice(startOf(Math.floor((i * words) / count)), startOf(Math.floor(((i + 1) * words) / count))),
    );
  }
  return out;
}

const MALFORMED_TEXT =
  'I would rather not follow any particular format here. There are many considerations, and the ' +
  'answer depends on context that was not provided.';

/** baseMs × (1 ± jitter), where `unit` (0 to 1) picks the point in that range. */
export function jitteredLatency(baseMs: number, jitter: number, unit: number): number {
  if (baseMs === 0 || jitter === 0) return baseMs;
  return Math.round(baseMs * (1 - jitter + 2 * jitter * unit));
}

/**
 * When streamed pieces fall due: one timer for each millisecond in which some piece is due,
 * however many streams are running. A worker with a thousand deliberations in flight streams
 * thousands of answers at once; a timer per piece (each an async resource, its hooks run) cost
 * more than delivering the piece. Wakes run outside the async context of the call that asked
 * (nothing on the piece's path reads it: the call's own code resumes in its own).
 */
class PieceClock {
  private readonly due = new Map<number, { wakes: (() => void)[]; timer: NodeJS.Timeout }>();

  /**
   * Calls `wake` once, at the first millisecond at or after `time` (a performance.now() time).
   * The function returned takes the wake back (an aborted stream): a millisecond left with no wake
   * loses its timer, so nothing of a stopped answer stays scheduled.
   */
  at(time: number, wake: () => void): () => void {
    const tick = Math.ceil(time);
    const waiting = this.due.get(tick);
    if (waiting) waiting.wakes.push(wake);
    else {
      const timer = setTimeout(() => this.fire(tick), Math.max(0, tick - performance.now()));
      this.due.set(tick, { wakes: [wake], timer });
    }
    return () => this.cancel(tick, wake);
  }

  private cancel(tick: number, wake: () => void): void {
    const waiting = this.due.get(tick);
    if (!waiting) return;
    const index = waiting.wakes.indexOf(wake);
    if (index >= 0) waiting.wakes.splice(index, 1);
    if (waiting.wakes.length === 0) {
      clearTimeout(waiting.timer);
      this.due.delete(tick);
    }
  }

  private fire(tick: number): void {
    const wakes = this.due.get(tick)?.wakes ?? [];
    this.due.delete(tick);
    // Every stream due is woken even if one wake throws (none should: a piece's listener's
    // failure goes to its own call); the first error is thrown after, as a timer's would be.
    let failure: { error: unknown } | null = null;
    for (const wake of wakes) {
      try {
        wake();
      } catch (error) {
        failure ??= { error };
      }
    }
    if (failure) throw failure.error;
  }
}

/**
 * The built-in provider: answers every prompt in its required format, deterministically for a seed,
 * and fails, hangs or misbehaves on request (see directives.ts).
 */
export class SimulatedProvider implements ModelProvider {
  readonly name = 'simulated';
  readonly key = 'simulated';
  private readonly transientSeen = new Set<string>();
  private readonly clock = new PieceClock();

  constructor(private readonly options: SimulatedProviderOptions) {}

  async complete(request: CompletionRequest): Promise<Completion> {
    const directives = parseSimModel(request.model);
    const prompt = [...request.messages].reverse().find((m) => m.role === 'user')?.content ?? '';
    const responder = this.options.responders.find((r) => r.matches(prompt)) ?? this.options.fallback;
    const callHash = hashString(`${this.options.seed}|${request.model}|${prompt}`);
    const fault = faultFor(directives, responder.kind);

    if (fault === 'timeout') return this.hang(request.signal);
    const latencyMs = this.latency(
      delayFor(directives, responder.kind),
      callHash,
      heavyFor(directives, responder.kind),
    );
    // A streamed answer is written over the call's latency; the rest of the call waits it whole.
    const streamed = request.onDelta !== undefined && fault !== 'fail' && fault !== 'transient';
    if (!streamed) await this.wait(latencyMs, request.signal);
    if (fault === 'fail') {
      throw new ModelCallError(`simulated failure of ${request.model}`, 'http', false, 400, undefined, {
        provider: this.key,
        reason: 'simulated failure',
      });
    }
    if (fault === 'transient' && !this.transientSeen.has(`${callHash}`)) {
      this.transientSeen.add(`${callHash}`);
      throw new ModelCallError(`simulated HTTP 503 from ${request.model}`, 'http', true, 503, 50, {
        provider: this.key,
      });
    }
    const content =
      fault === 'malformed'
        ? MALFORMED_TEXT
        : responder.respond({
            model: request.model,
            persona: directives.persona,
            flags: directives.flags,
            messages: request.messages,
            prompt,
            random: seededRandom(callHash),
            seed: this.options.seed,
            ...(request.expected !== undefined ? { expected: request.expected } : {}),
          });
    if (streamed) await this.stream(content, latencyMs, request);
    const promptTokens = Math.ceil(request.messages.reduce((n, m) => n + m.content.length, 0) / 4);
    return {
      content,
      servedModel: request.model,
      usage: { promptTokens, completionTokens: Math.ceil(content.length / 4), costUsd: 0 },
      simulated: true,
      finishReason: 'stop',
    };
  }

  /**
   * Hands `content` to onDelta in pieces spread evenly over `latencyMs`, the last at its end. Each
   * piece is due at its own time from the start, as a real provider's stream arrives on the
   * provider's clock: a busy event loop hands over the pieces that fell due together, late, instead
   * of pushing every later piece back by the delay (chained timers made a 2 s answer take 3 s under
   * load). One abort listener for the whole answer, one timer per wake-up (not a promise and a
   * listener each: a benchmark's worker runs hundreds of these a second).
   */
  private async stream(content: string, latencyMs: number, request: CompletionRequest): Promise<void> {
    const pieces = streamPiecesOf(content, this.options.streamPieces ?? 20);
    const step = pieces.length > 0 ? latencyMs / pieces.length : latencyMs;
    const { signal } = request;
    if (pieces.length === 0 || step <= 0) {
      if (pieces.length === 0) await this.wait(latencyMs, signal);
      for (const piece of pieces) {
        // No wait between pieces, but an abort (before the call, or from onDelta) still stops it.
        if (signal.aborted) throw abortError(signal);
        request.onDelta?.(piece);
      }
      if (signal.aborted) throw abortError(signal);
      return;
    }
    if (signal.aborted) throw abortError(signal);
    const startedAt = performance.now();
    const dueAt = (index: number) => startedAt + step * (index + 1);
    await new Promise<void>((resolve, reject) => {
      let next = 0;
      // Set by the abort listener, which runs the moment the signal aborts (an onDelta that stops
      // the call included): reading signal.aborted on every piece cost more than the piece.
      let aborted = false;
      let takeBack = (): void => undefined;
      const onAbort = () => {
        aborted = true;
        takeBack();
        reject(abortError(signal));
      };
      const deliver = () => {
        if (aborted) return;
        const now = performance.now();
        try {
          do {
            request.onDelta?.(pieces[next++]);
          } while (next < pieces.length && dueAt(next) <= now && !aborted);
        } catch (error) {
          signal.removeEventListener('abort', onAbort);
          reject(error);
          return;
        }
        if (aborted) return;
        if (next < pieces.length) {
          takeBack = this.clock.at(dueAt(next), deliver);
          return;
        }
        signal.removeEventListener('abort', onAbort);
        resolve();
      };
      signal.addEventListener('abort', onAbort, { once: true });
      takeBack = this.clock.at(dueAt(0), deliver);
    });
  }

  private latency(
    modelDelayMs: number | null,
    callHash: number,
    heavy: { medianMs: number | null } | null,
  ): number {
    if (modelDelayMs !== null) return modelDelayMs;
    if (heavy) {
      const random = seededRandom(callHash ^ 0x2545f491);
      return heavyTailedLatency(heavy.medianMs ?? this.options.latencyMs, random(), random());
    }
    const jitter = this.options.latencyJitter ?? 0.5;
    // +-jitter (50% by default) so parallel calls settle in a varying order, like a real panel.
    return jitteredLatency(this.options.latencyMs, jitter, seededRandom(callHash ^ 0x5bd1e995)());
  }

  private wait(ms: number, signal: AbortSignal): Promise<void> {
    if (signal.aborted) return Promise.reject(abortError(signal));
    if (ms <= 0) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        signal.removeEventListener('abort', onAbort);
        resolve();
      }, ms);
      const onAbort = () => {
        clearTimeout(timer);
        reject(abortError(signal));
      };
      signal.addEventListener('abort', onAbort, { once: true });
    });
  }

  private hang(signal: AbortSignal): Promise<never> {
    return new Promise((_, reject) => {
      if (signal.aborted) return reject(abortError(signal));
      signal.addEventListener('abort', () => reject(abortError(signal)), { once: true });
    });
  }
}

function abortError(signal: AbortSignal): ModelCallError {
  return modelCallErrorFromAbort(signal);
}
