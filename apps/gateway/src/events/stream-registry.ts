import { Inject, Injectable, Logger, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import type { ConclaveConfig } from '@conclave/config';
import { connectionErrorLogger } from '@conclave/observability';
import { ApiKeysRepository, revokedKeysChannel } from '@conclave/persistence';
import { createRedis, type RedisClient } from '@conclave/redis';
import { ApiError } from '../common/api-error';
import { CONFIG } from '@conclave/platform';

export type StreamKind = 'socket' | 'sse';
/** Why the gateway closed a stream: its key was revoked, or its client stopped reading. */
export type CloseReason = 'revoked' | 'slow';

interface Counts {
  socket: number;
  sse: number;
  subscriptions: number;
}

/**
 * One open Socket.IO socket or SSE stream. Its owner calls `release()` when it ends however it ends;
 * the registry calls `close()` (through the owner's close function) to end it.
 */
export class LiveStream {
  private subscriptions = 0;
  private released = false;

  constructor(
    readonly kind: StreamKind,
    readonly userId: string,
    /** The API key it authenticated with; null in single-user mode. */
    readonly keyId: string | null,
    private readonly closer: (reason: CloseReason, detail: string) => void,
    private readonly registry: StreamRegistry,
  ) {}

  get isReleased(): boolean {
    return this.released;
  }

  /**
   * Takes one subscription place of the user (a message or batch subscription, or an SSE stream);
   * throws a 429 over MAX_SUBSCRIPTIONS_PER_USER. Returns the function that gives it back.
   */
  subscribe(): () => void {
    this.registry.take(this.userId, 'subscriptions');
    this.subscriptions += 1;
    let given = false;
    return () => {
      if (given || this.released) return;
      given = true;
      this.subscriptions -= 1;
      this.registry.give(this.userId, 'subscriptions', 1);
    };
  }

  /** Ends the stream; its owner's close function runs once, and every place it held is given back. */
  close(reason: CloseReason, detail: string): void {
    if (this.released) return;
    this.release();
    this.closer(reason, detail);
  }

  release(): void {
    if (this.released) return;
    this.released = true;
    this.registry.forget(this);
    this.registry.give(this.userId, 'subscriptions', this.subscriptions);
    this.subscriptions = 0;
  }
}

const LIMIT_NAMES: Record<keyof Counts, string> = {
  socket: 'MAX_SOCKETS_PER_USER',
  sse: 'MAX_SSE_STREAMS_PER_USER',
  subscriptions: 'MAX_SUBSCRIPTIONS_PER_USER',
};

/**
 * The live connections of this gateway replica: how many each user holds (capped per user on each
 * replica), and which API key each authenticated with, so that revoking a key closes them. A
 * revocation reaches every replica through Redis (`npm run user:revoke-key` publishes it); a
 * periodic recheck against PostgreSQL (STREAM_KEY_RECHECK_MS) catches one Redis did not carry.
 */
@Injectable()
export class StreamRegistry implements OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger('streams');
  private readonly counts = new Map<string, Counts>();
  private readonly byKey = new Map<string, Set<LiveStream>>();
  private subscriber: RedisClient | null = null;
  private recheckTimer: NodeJS.Timeout | null = null;

  constructor(
    @Inject(CONFIG) private readonly config: ConclaveConfig,
    private readonly apiKeys: ApiKeysRepository,
  ) {}

  async onModuleInit(): Promise<void> {
    this.subscriber = createRedis(
      this.config,
      'subscriber',
      connectionErrorLogger((message) => this.logger.warn(`redis subscriber: ${message}`)),
    );
    this.subscriber.on('message', (_channel: string, raw: string) => this.onRevoked(raw));
    let connected = false;
    // Revocations announced while we were disconnected are gone: look in PostgreSQL.
    this.subscriber.on('ready', () => {
      if (connected) void this.recheck();
      connected = true;
    });
    await this.subscriber.subscribe(revokedKeysChannel(this.config.redisPrefix));
    this.recheckTimer = setInterval(() => void this.recheck(), this.config.streams.keyRecheckMs);
    this.recheckTimer.unref();
  }

  async onModuleDestroy(): Promise<void> {
    if (this.recheckTimer) clearInterval(this.recheckTimer);
    this.subscriber?.disconnect();
  }

  /**
   * Registers a new socket or SSE stream of a user (an SSE stream also takes a subscription place);
   * throws a 429 naming the limit when the user already holds the most allowed on this replica.
   */
  open(
    kind: StreamKind,
    userId: string,
    keyId: string | null,
    closer: (reason: CloseReason, detail: string) => void,
  ): LiveStream {
    this.take(userId, kind);
    const stream = new LiveStream(kind, userId, keyId, closer, this);
    if (keyId !== null) {
      const set = this.byKey.get(keyId) ?? new Set<LiveStream>();
      set.add(stream);
      this.byKey.set(keyId, set);
    }
    return stream;
  }

  /** Open streams of a user on this replica, by kind (for tests and metrics). */
  countOf(userId: string): Counts {
    return { ...(this.counts.get(userId) ?? { socket: 0, sse: 0, subscriptions: 0 }) };
  }

  /** Closes every open stream authenticated with one of these keys. */
  closeKeys(keyIds: Iterable<string>): number {
    let closed = 0;
    for (const keyId of keyIds) {
      for (const stream of [...(this.byKey.get(keyId) ?? [])]) {
        stream.close('revoked', 'the API key was revoked');
        closed += 1;
      }
    }
    return closed;
  }

  /** Closes the streams whose key is no longer valid in PostgreSQL: one query for all of them. */
  async recheck(): Promise<void> {
    const keyIds = [...this.byKey.keys()];
    if (keyIds.length === 0) return;
    let active: Set<string>;
    try {
      active = await this.apiKeys.activeIds(keyIds);
    } catch (error) {
      // PostgreSQL away: keep the streams (refusing them all would turn an outage into a logout).
      this.logger.warn(`key recheck skipped: ${error instanceof Error ? error.message : String(error)}`);
      return;
    }
    const closed = this.closeKeys(keyIds.filter((id) => !active.has(id)));
    if (closed > 0) this.logger.log(`closed ${closed} stream(s) of revoked keys (recheck)`);
  }

  private onRevoked(raw: string): void {
    let keyIds: unknown;
    try {
      keyIds = (JSON.parse(raw) as { keyIds?: unknown }).keyIds;
    } catch {
      keyIds = undefined;
    }
    if (!Array.isArray(keyIds) || !keyIds.every((id) => typeof id === 'string')) {
      this.logger.warn('dropped an unreadable key revocation message');
      return;
    }
    const closed = this.closeKeys(keyIds as string[]);
    if (closed > 0) this.logger.log(`closed ${closed} stream(s) of revoked keys`);
  }

  /** @internal Takes a place of the user, or throws the 429 that names the limit. */
  take(userId: string, what: keyof Counts): void {
    const counts = this.counts.get(userId) ?? { socket: 0, sse: 0, subscriptions: 0 };
    const needed: (keyof Counts)[] = what === 'sse' ? ['sse', 'subscriptions'] : [what];
    for (const kind of needed) {
      const max = this.max(kind);
      if (max > 0 && counts[kind] >= max) throw new ApiError(429, this.refusal(kind, max));
    }
    for (const kind of needed) counts[kind] += 1;
    this.counts.set(userId, counts);
  }

  /** @internal */
  give(userId: string, what: keyof Counts, n: number): void {
    const counts = this.counts.get(userId);
    if (!counts || n <= 0) return;
    counts[what] = Math.max(0, counts[what] - n);
    if (counts.socket === 0 && counts.sse === 0 && counts.subscriptions === 0) this.counts.delete(userId);
  }

  /** @internal A released stream: its own place (and an SSE stream's subscription) back, its key forgotten. */
  forget(stream: LiveStream): void {
    this.give(stream.userId, stream.kind, 1);
    if (stream.kind === 'sse') this.give(stream.userId, 'subscriptions', 1);
    if (stream.keyId === null) return;
    const set = this.byKey.get(stream.keyId);
    set?.delete(stream);
    if (set?.size === 0) this.byKey.delete(stream.keyId);
  }

  private max(kind: keyof Counts): number {
    const streams = this.config.streams;
    if (kind === 'socket') return streams.maxSocketsPerUser;
    if (kind === 'sse') return streams.maxSseStreamsPerUser;
    return streams.maxSubscriptionsPerUser;
  }

  private refusal(kind: keyof Counts, max: number): string {
    const what =
      kind === 'socket'
        ? 'too many open sockets'
        : kind === 'sse'
          ? 'Too many open event streams'
          : 'Too many subscriptions';
    const advice = kind === 'subscriptions' ? '; unsubscribe from some first' : '; close some first';
    return `${what}: at most ${max} per user on each gateway (${LIMIT_NAMES[kind]})${advice}`;
  }
}
