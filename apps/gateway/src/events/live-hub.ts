import { randomBytes } from 'node:crypto';
import { Inject, Injectable, Logger, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import type { ConclaveConfig } from '@conclave/config';
import {
  liveChannel,
  type DeliveredEvent,
  type LiveCallId,
  type LiveChannelMessage,
  type LiveEvent,
  type ModelDeltaPayload,
  type ModelPartialPayload,
} from '@conclave/contracts';
import { connectionErrorLogger } from '@conclave/observability';
import { CONFIG, REDIS_PRODUCER } from '@conclave/platform';
import { LiveSubscriber, publishControl, readJson, type RedisClient } from '@conclave/redis';
import { LiveStitcher } from './live-stitcher';

/** What a watcher needs of its delivery: when its replay is done, and whether it has ended. */
export interface CatchingUp {
  readonly caughtUp: Promise<void>;
  readonly isEnded: boolean;
}

/** What a watcher asks of its hub. */
export interface WatcherHub {
  register(watcher: LiveWatcher): Promise<void>;
  unregister(watcher: LiveWatcher): void;
  announce(messageId: string, stage: string): void;
}

/** One message this gateway has delta watchers of: its channel (subscribed while it has any). */
interface Watched {
  messageId: string;
  channel: string;
  watchers: Set<LiveWatcher>;
  /** The SUBSCRIBE, acknowledged (true) or failed (false). */
  subscribed: Promise<boolean>;
  /** Stages whose start has been announced to the workers (a `watch` sent again). */
  announced: Set<string>;
  /** Whom a re-announcement's answers so far are for: every local watcher of the message. */
  replyTo: string;
}

/**
 * Where deltas reach the clients that ask for them (`subscribe { deltas: true }`, SSE `?deltas=1`).
 * Workers publish a message's live pieces only while someone watches it, on the message's own
 * channel; this gateway SUBSCRIBEs to that channel only while it has a watcher of the message
 * (one SUBSCRIBE however many local watchers), and tells the workers with a `watch` control message
 * once the subscription is in place: the worker running the message's calls answers with the answer
 * so far of each, then sends coalesced deltas. A later stage may run on another worker, so the
 * `watch` is sent again when a stage's first call start is delivered here.
 *
 * Every partial on the channel is applied to every local watcher of the message, not only to the
 * one it answers: a worker sends what is pending as deltas before answering a `watch`, but a
 * watcher whose deltas were lost (a Redis reconnect) then catches up from the next partial too.
 * The stitcher drops what a watcher already has.
 */
@Injectable()
export class LiveHub implements WatcherHub, OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger('live');
  /** This gateway replica, in every `replyTo` it sends. */
  readonly instance = randomBytes(6).toString('hex');
  private readonly byMessage = new Map<string, Watched>();
  private readonly byChannel = new Map<string, Watched>();
  private subscriber: LiveSubscriber | null = null;
  private watcherCount = 0;

  constructor(
    @Inject(CONFIG) private readonly config: ConclaveConfig,
    @Inject(REDIS_PRODUCER) private readonly redis: RedisClient,
  ) {}

  onModuleInit(): void {
    let connected = false;
    // SUBSCRIBE on one Redis, sharded SSUBSCRIBE on a Redis Cluster (LiveSubscriber).
    this.subscriber = new LiveSubscriber(
      this.config,
      connectionErrorLogger((message) => this.logger.warn(`redis live subscriber: ${message}`)),
    );
    this.subscriber.onMessage((channel, raw) => this.dispatch(channel, raw));
    // Pieces published while we were away are gone: ask the workers again for the answers so far.
    this.subscriber.onReady(() => {
      if (connected) void this.rewatchAll();
      connected = true;
    });
  }

  onModuleDestroy(): void {
    const subscriber = this.subscriber;
    // The connection goes: no UNSUBSCRIBE for each channel on the way.
    this.subscriber = null;
    for (const watched of [...this.byMessage.values()]) {
      for (const watcher of [...watched.watchers]) watcher.close();
    }
    subscriber?.disconnect();
  }

  /** Local watchers (for tests and metrics). */
  get watching(): { messages: number; watchers: number } {
    let watchers = 0;
    for (const watched of this.byMessage.values()) watchers += watched.watchers.size;
    return { messages: this.byMessage.size, watchers };
  }

  /**
   * A subscriber that asked for deltas. Pass every stored event it is sent to `delivered`, start it
   * with `follow(delivery)` and close it when the subscription ends. `emit` sends one live event;
   * `room` is the client's backpressure (null: go on).
   */
  watcher(
    messageId: string,
    emit: (event: LiveEvent) => void,
    room: () => Promise<void> | null,
  ): LiveWatcher {
    this.watcherCount += 1;
    return new LiveWatcher(this, messageId, `${this.instance}:${this.watcherCount}`, emit, room, (m) =>
      this.logger.warn(m),
    );
  }

  /** @internal The watcher's replay is done: subscribe (if first), then tell the workers. */
  async register(watcher: LiveWatcher): Promise<void> {
    let watched = this.byMessage.get(watcher.messageId);
    if (!watched) {
      const channel = liveChannel(this.config.redisPrefix, watcher.messageId);
      watched = {
        messageId: watcher.messageId,
        channel,
        watchers: new Set(),
        subscribed: this.subscribe(channel),
        announced: new Set(),
        replyTo: `${this.instance}:m:${watcher.messageId}`,
      };
      this.byMessage.set(watcher.messageId, watched);
      this.byChannel.set(channel, watched);
    }
    watched.watchers.add(watcher);
    await this.sendWatch(watched, watcher.id);
  }

  /** @internal The watcher has gone: the last one of a message unsubscribes. */
  unregister(watcher: LiveWatcher): void {
    const watched = this.byMessage.get(watcher.messageId);
    if (!watched?.watchers.delete(watcher) || watched.watchers.size > 0) return;
    this.byMessage.delete(watched.messageId);
    this.byChannel.delete(watched.channel);
    // Commands on the subscriber connection keep their order: a SUBSCRIBE for a new watcher sent
    // after this one is applied after it.
    this.subscriber?.unsubscribe(watched.channel).catch((error: unknown) => {
      this.logger.warn(`could not unsubscribe from ${watched.channel}: ${String(error)}`);
    });
  }

  /** @internal A watcher was sent a call's start: the stage may run on a worker that has not heard. */
  announce(messageId: string, stage: string): void {
    const watched = this.byMessage.get(messageId);
    if (!watched || watched.announced.has(stage)) return;
    watched.announced.add(stage);
    void this.sendWatch(watched, watched.replyTo);
  }

  private async subscribe(channel: string): Promise<boolean> {
    try {
      if (!this.subscriber) return false;
      await this.subscriber.subscribe(channel);
      return true;
    } catch (error) {
      this.logger.warn(`could not subscribe to ${channel}: ${String(error)}`);
      return false;
    }
  }

  /** A `watch` once the channel is subscribed, so that the answer to it cannot pass us by. */
  private async sendWatch(watched: Watched, replyTo: string): Promise<void> {
    if (!(await watched.subscribed) || this.byMessage.get(watched.messageId) !== watched) return;
    try {
      await publishControl(this.redis, this.config.redisPrefix, {
        type: 'watch',
        messageId: watched.messageId,
        replyTo,
      });
    } catch (error) {
      // Deltas are a courtesy: the stored answers still arrive with the call's `succeeded` event.
      this.logger.warn(`could not ask for the deltas of ${watched.messageId}: ${String(error)}`);
    }
  }

  /** After a reconnect: subscribe again (ioredis does too; this waits for it), then `watch` again. */
  private async rewatchAll(): Promise<void> {
    const all = [...this.byMessage.values()];
    if (all.length === 0 || !this.subscriber) return;
    try {
      await this.subscriber.subscribe(...all.map((w) => w.channel));
    } catch (error) {
      this.logger.warn(`could not subscribe again to live channels: ${String(error)}`);
      return;
    }
    for (const watched of all) void this.sendWatch(watched, watched.replyTo);
  }

  private dispatch(channel: string, raw: string): void {
    const watched = this.byChannel.get(channel);
    if (!watched) return;
    const message = parseLiveMessage(raw);
    if (!message) {
      this.logger.warn(`dropped an unreadable live message on ${channel}`);
      return;
    }
    for (const watcher of watched.watchers) watcher.receive(message);
  }
}

/**
 * One subscriber's deltas of one message. Nothing goes out until its stored events have been
 * replayed (`follow`); then the answers so far, then deltas, through the client's backpressure:
 * while the client is behind (`room` answers a promise), what arrives is coalesced per call and
 * sent in one piece once it has read enough. So a slow client costs at most the text of the
 * answers in flight, and stored events never wait behind an unbounded queue of deltas.
 */
export class LiveWatcher {
  private readonly stitcher: LiveStitcher;
  private state: 'waiting' | 'live' | 'closed' = 'waiting';
  private blocked: Promise<void> | null = null;
  private gapTimer: NodeJS.Timeout | null = null;

  constructor(
    private readonly hub: WatcherHub,
    readonly messageId: string,
    /** Sent as `replyTo`: this gateway and this watcher. */
    readonly id: string,
    private readonly emit: (event: LiveEvent) => void,
    private readonly room: () => Promise<void> | null,
    log: (message: string) => void,
  ) {
    this.stitcher = new LiveStitcher(Date.now, undefined, (m) => log(`${messageId}: ${m}`));
  }

  /** Starts watching once the delivery's replay is done (not at all if it has ended by then). */
  follow(delivery: CatchingUp): void {
    void delivery.caughtUp.then(() => {
      if (delivery.isEnded || this.state !== 'waiting') return;
      this.state = 'live';
      void this.hub.register(this);
    });
  }

  /**
   * A stored event is about to be sent: a call's `succeeded` first completes that call's live text
   * (what is still on its way is sent now), so the client has its whole answer in deltas before
   * the event that closes it.
   */
  beforeDelivery(event: DeliveredEvent): void {
    if (this.state !== 'live' || event.type !== 'model_progress') return;
    const { state, stage, participant, content } = event as DeliveredEvent<{
      state?: unknown;
      stage?: unknown;
      participant?: unknown;
      content?: unknown;
    }>;
    if (state !== 'succeeded' || typeof stage !== 'string' || typeof content !== 'string') return;
    if (typeof participant !== 'string' && typeof participant !== 'number') return;
    this.stitcher.complete(stage, participant, content);
    this.send();
  }

  /** A stored event was sent to the subscriber. */
  delivered(event: DeliveredEvent): void {
    if (this.state !== 'live' || event.type !== 'model_progress') return;
    const { state, stage } = event as DeliveredEvent<{ state?: unknown; stage?: unknown }>;
    if (state === 'started' && typeof stage === 'string') this.hub.announce(this.messageId, stage);
  }

  close(): void {
    if (this.state === 'closed') return;
    const wasLive = this.state === 'live';
    // What is queued goes out before the end (the subscription ends after its terminal event).
    if (wasLive) this.send();
    this.state = 'closed';
    if (this.gapTimer) clearTimeout(this.gapTimer);
    this.gapTimer = null;
    if (wasLive) this.hub.unregister(this);
  }

  /** @internal What a worker published on the message's channel. */
  receive(message: LiveChannelMessage): void {
    if (this.state !== 'live') return;
    if (message.kind === 'partials') for (const piece of message.partials) this.stitcher.partial(piece);
    else for (const piece of message.deltas) this.stitcher.delta(piece);
    this.flush();
    this.armGapTimer();
  }

  private flush(): void {
    if (this.state !== 'live' || this.blocked) return;
    const wait = this.room();
    if (wait) {
      this.blocked = wait.then(() => {
        this.blocked = null;
        this.flush();
      });
      return;
    }
    this.send();
  }

  /** Sends what is queued now, whatever the client's backlog: at most the answers in flight. */
  private send(): void {
    for (const piece of this.stitcher.take()) this.emit({ ...piece, messageId: this.messageId });
  }

  private armGapTimer(): void {
    if (this.gapTimer || this.state !== 'live') return;
    const deadline = this.stitcher.nextDeadline();
    if (deadline === null) return;
    this.gapTimer = setTimeout(
      () => {
        this.gapTimer = null;
        if (this.state !== 'live') return;
        this.stitcher.expire();
        this.flush();
        this.armGapTimer();
      },
      Math.max(0, deadline - Date.now()),
    );
    this.gapTimer.unref();
  }
}

const isPiece = (value: unknown): value is ModelPartialPayload & LiveCallId => {
  if (typeof value !== 'object' || value === null) return false;
  const { call, stage, participant, model, text } = value as Record<string, unknown>;
  return (
    typeof call === 'string' &&
    typeof stage === 'string' &&
    (typeof participant === 'string' || typeof participant === 'number') &&
    (typeof model === 'string' || model === null) &&
    typeof text === 'string'
  );
};

const isDelta = (value: unknown): value is ModelDeltaPayload & LiveCallId => {
  if (!isPiece(value)) return false;
  const { offset } = value as { offset?: unknown };
  return typeof offset === 'number' && Number.isInteger(offset) && offset >= 0;
};

/** Reads what a worker published on a live channel; null for anything else. */
export function parseLiveMessage(raw: string): LiveChannelMessage | null {
  const value = readJson(raw);
  if (typeof value !== 'object' || value === null) return null;
  const { kind, replyTo, partials, deltas } = value as Record<string, unknown>;
  if (kind === 'partials' && typeof replyTo === 'string' && Array.isArray(partials)) {
    return partials.every(isPiece) ? { kind, replyTo, partials } : null;
  }
  if (kind === 'deltas' && Array.isArray(deltas)) return deltas.every(isDelta) ? { kind, deltas } : null;
  return null;
}
