import {
  DELTA_INTERVAL_MS,
  type LiveCallId,
  type ModelDeltaPayload,
  type ModelPartialPayload,
} from '@conclave/contracts';
import type { PlannedCall } from './types';

/** How long a watch of a deliberation with no call running here holds for calls that begin (see LiveCalls.early). */
export const EARLY_WATCH_MS = 30_000;
const EARLY_WATCH_LIMIT = 10_000;
/**
 * How long, and for how many deliberations, a stop is remembered: a call that begins after it
 * (a seat's next fallback whose start raced the stop) is aborted at once. The 600 s cap bounds
 * how long a deliberation's stage can still be starting calls.
 */
export const STOPPED_MEMORY_MS = 10 * 60_000;
const STOPPED_MEMORY_LIMIT = 10_000;

/** Where a worker's live pieces go (a Redis channel per message in production). */
export interface LiveChannel {
  /** Sends coalesced deltas of one message; resolves false when nobody watches it any more. */
  sendDeltas(messageId: string, deltas: (ModelDeltaPayload & LiveCallId)[]): Promise<boolean>;
  /** Sends the answers so far of a message's running calls to the watcher `replyTo`. */
  sendPartials(
    messageId: string,
    replyTo: string,
    partials: (ModelPartialPayload & LiveCallId)[],
  ): Promise<void>;
}

/** The reason a stopped deliberation's calls are aborted with; callOne recognises it. */
export class DeliberationStopped extends Error {
  constructor(readonly reason: string) {
    super(reason);
    this.name = 'DeliberationStopped';
  }
}

/**
 * A model call in flight on this worker, as its heartbeat lists it (see InFlightCalls): if the
 * worker dies, the worker that takes its stage over counts the call, which the provider bills
 * though its answer died with the process.
 */
export interface InFlightCall {
  messageId: string;
  stage: string;
  key: string;
  model: string;
  /** When it began (this worker's clock, ms). */
  startedAt: number;
}

/** One call in flight, as the engine drives it. */
export interface LiveCall {
  /** Aborted when the deliberation is stopped (with a DeliberationStopped reason). */
  readonly signal: AbortSignal;
  /** The provider's onDelta: appends text to the answer so far. */
  onDelta(text: string): void;
  /** The call has settled: sends what is still pending and forgets it. */
  end(): void;
}

interface Running {
  id: string;
  stage: string;
  participant: string | number;
  model: string | null;
  text: string;
  /** How much of `text` has been sent as deltas. */
  sent: number;
  controller: AbortController;
}

/**
 * The calls a worker has in flight, by deliberation: their answers so far, and the switch that
 * stops them. Deltas cost nothing until someone watches a deliberation (a `watch` from a gateway);
 * then what each call wrote is sent at most every DELTA_INTERVAL_MS, one message per deliberation
 * per tick, until the channel says nobody listens any more.
 */
export class LiveCalls {
  private readonly byMessage = new Map<string, Set<Running>>();
  /** Watched deliberations, with a count of the watches each received (see send). */
  private readonly watched = new Map<string, number>();
  /**
   * Watches of deliberations with no call running here, and when they came: a stage is opened by
   * the previous stage's commit, so its 'started' events (which gateways answer with a `watch`) can
   * arrive before its calls start here. Calls that begin within EARLY_WATCH_MS are watched.
   */
  private readonly early = new Map<string, number>();
  /** Deliberations stopped here recently, with the reason and when (oldest first). */
  private readonly stopped = new Map<string, { reason: string; at: number }>();
  private timer: NodeJS.Timeout | null = null;
  /** Every call in flight here, silent ones (titles) included (see track). */
  private readonly inFlight = new Set<InFlightCall>();
  private tracked: () => void = () => undefined;

  constructor(
    private readonly channel: LiveChannel | null,
    private readonly log: (message: string) => void = () => undefined,
    private readonly intervalMs = DELTA_INTERVAL_MS,
  ) {}

  begin(messageId: string, stage: string, call: PlannedCall): LiveCall {
    const running: Running = {
      id: `${stage}:${call.key}`,
      stage,
      participant: call.participant,
      // Anonymous modes number their participants: the model would name the author.
      model: typeof call.participant === 'number' ? null : call.model,
      text: '',
      sent: 0,
      controller: new AbortController(),
    };
    const stop = this.stopped.get(messageId);
    if (stop && Date.now() - stop.at <= STOPPED_MEMORY_MS) {
      running.controller.abort(new DeliberationStopped(stop.reason));
    }
    const set = this.byMessage.get(messageId) ?? new Set<Running>();
    set.add(running);
    this.byMessage.set(messageId, set);
    const early = this.early.get(messageId);
    if (early !== undefined) {
      this.early.delete(messageId);
      if (Date.now() - early <= EARLY_WATCH_MS && !this.watched.has(messageId))
        this.watched.set(messageId, 1);
    }
    return {
      signal: running.controller.signal,
      onDelta: (text) => {
        running.text += text;
        if (this.watched.has(messageId)) this.schedule();
      },
      end: () => {
        if (this.watched.has(messageId) && running.sent < running.text.length) {
          void this.send(messageId, [running]);
        }
        set.delete(running);
        if (set.size === 0) {
          this.byMessage.delete(messageId);
          this.watched.delete(messageId);
        }
      },
    };
  }

  /**
   * Aborts every call of the deliberation running here, and any that begins here within
   * STOPPED_MEMORY_MS; returns how many were running.
   */
  stop(messageId: string, reason: string): number {
    this.remember(messageId, reason);
    const set = this.byMessage.get(messageId);
    if (!set) return 0;
    for (const running of set) running.controller.abort(new DeliberationStopped(reason));
    return set.size;
  }

  /** Whether a stop of the deliberation was heard here within STOPPED_MEMORY_MS. */
  wasStopped(messageId: string): boolean {
    const stop = this.stopped.get(messageId);
    return stop !== undefined && Date.now() - stop.at <= STOPPED_MEMORY_MS;
  }

  private remember(messageId: string, reason: string): void {
    const now = Date.now();
    this.stopped.delete(messageId);
    this.stopped.set(messageId, { reason, at: now });
    for (const [id, { at }] of this.stopped) {
      if (this.stopped.size <= STOPPED_MEMORY_LIMIT && now - at <= STOPPED_MEMORY_MS) break;
      this.stopped.delete(id);
    }
  }

  /** Lists a call as in flight here until the returned function is called (when it settles). */
  track(messageId: string, stage: string, call: PlannedCall): () => void {
    const entry: InFlightCall = { messageId, stage, key: call.key, model: call.model, startedAt: Date.now() };
    this.inFlight.add(entry);
    this.tracked();
    return () => void this.inFlight.delete(entry);
  }

  /** Called whenever a call begins (the heartbeat lists it soon rather than at its next beat). */
  onTracked(listener: () => void): void {
    this.tracked = listener;
  }

  /** The calls in flight here now (tracked ones), for the worker's heartbeat. */
  inFlightCalls(): InFlightCall[] {
    return [...this.inFlight];
  }

  /** A gateway has a watcher for the deliberation: send it the answers so far, then deltas. */
  watch(messageId: string, replyTo: string): void {
    const set = this.byMessage.get(messageId);
    if (!this.channel) return;
    if (!set) {
      // Its calls may be about to start here (see `early`): they send deltas from their first piece.
      this.early.set(messageId, Date.now());
      for (const [id, at] of this.early) {
        if (this.early.size <= EARLY_WATCH_LIMIT && Date.now() - at <= EARLY_WATCH_MS) break;
        this.early.delete(id);
      }
      return;
    }
    // Watchers already there get the text still pending as deltas first (published before the
    // partials, on the same connection): the partials then start where those end.
    if (this.watched.has(messageId)) void this.send(messageId, [...set]);
    this.watched.set(messageId, (this.watched.get(messageId) ?? 0) + 1);
    const partials = [...set].map((r) => {
      r.sent = r.text.length;
      return { call: r.id, stage: r.stage, participant: r.participant, model: r.model, text: r.text };
    });
    this.channel.sendPartials(messageId, replyTo, partials).catch((error: unknown) => {
      this.log(`could not send the answers so far of ${messageId}: ${String(error)}`);
    });
  }

  /** The deliberations with calls in flight here. */
  messageIds(): string[] {
    return [...this.byMessage.keys()];
  }

  /** How many calls are in flight here. */
  get size(): number {
    let n = 0;
    for (const set of this.byMessage.values()) n += set.size;
    return n;
  }

  private schedule(): void {
    if (this.timer) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      for (const messageId of this.watched.keys()) {
        const set = this.byMessage.get(messageId);
        if (set) void this.send(messageId, [...set]);
      }
    }, this.intervalMs);
  }

  private async send(messageId: string, calls: Running[]): Promise<void> {
    const deltas: (ModelDeltaPayload & LiveCallId)[] = [];
    for (const r of calls) {
      if (r.sent >= r.text.length) continue;
      deltas.push({
        call: r.id,
        stage: r.stage,
        participant: r.participant,
        model: r.model,
        text: r.text.slice(r.sent),
        offset: r.sent,
      });
      r.sent = r.text.length;
    }
    if (deltas.length === 0 || !this.channel) return;
    const watches = this.watched.get(messageId);
    try {
      const heard = await this.channel.sendDeltas(messageId, deltas);
      // Nobody heard it: stop, unless a watch came in meanwhile (its watcher subscribed after this left).
      if (!heard && this.watched.get(messageId) === watches) this.watched.delete(messageId);
    } catch (error) {
      // Deltas are a courtesy: the stored answer still arrives with the call's `succeeded` event.
      this.log(`could not send deltas of ${messageId}: ${String(error)}`);
    }
  }
}
