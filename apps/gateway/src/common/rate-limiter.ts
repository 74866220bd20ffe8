import type { IncomingMessage } from 'node:http';
import { isIPv4, isIPv6 } from 'node:net';
import { Inject, Injectable, Logger, Optional } from '@nestjs/common';
import type { ConclaveConfig } from '@conclave/config';
import { CONFIG, REDIS_PRODUCER } from '@conclave/platform';
import {
  MemorySlidingLog,
  RedisSlidingLog,
  type RedisClient,
  type SlidingVerdict,
  type SlidingWindow,
} from '@conclave/redis';
import { ApiError } from './api-error';

export type RateBucket = 'requests' | 'deliberations' | 'batchItems';

const MINUTE_MS = 60_000;
const HOUR_MS = 3_600_000;

export interface RateLimiterOptions {
  /**
   * The clock, in ms since the epoch; only tests inject one. By default Redis's own clock
   * (`TIME`) decides, so the replicas' clocks never matter; the in-memory fallback uses Date.now.
   */
  now?: () => number;
  /** How long to wait for Redis before treating it as unavailable (a stalled Redis, not only a dead one). */
  redisTimeoutMs?: number;
  /** Most subjects the in-memory fallback keeps; beyond it the least recently added are forgotten. */
  memoryMaxKeys?: number;
}

export const RATE_LIMITER_OPTIONS = Symbol('RATE_LIMITER_OPTIONS');

/** What one limit counts (its sliding window), and what the limiter does when Redis cannot count. */
interface Rule extends SlidingWindow {
  /** Said in the 429: "Too many <what>". */
  what: string;
  /** "a minute" / "an hour". */
  per: string;
  /** The setting, named in messages where raising it is the remedy. */
  setting: string;
  /**
   * Without Redis: `memory` counts in this process (per replica, so N replicas admit up to N × the
   * limit); `closed` refuses with 503.
   */
  withoutRedis: 'memory' | 'closed';
}

/** What `take` counted in Redis, to give back (`giveBack`) when what it paid for was refused after all. */
export interface RateTaken {
  readonly rule: string;
  readonly subject: string;
  readonly member: string;
}

/**
 * The subject an address is counted under: IPv4 as is (also when IPv4-mapped), IPv6 by its /64,
 * the block one host is normally given (it can use every address in it).
 */
export function addressSubject(address: string): string {
  const bare = address.replace(/^\[|\]$/g, '').replace(/%.*$/, '');
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(bare);
  if (mapped) return mapped[1];
  if (isIPv4(bare) || !isIPv6(bare)) return bare;
  let groups: string[];
  const [head, tail] = bare.toLowerCase().split('::');
  const split = (part: string | undefined) => (part ? part.split(':') : []);
  if (tail === undefined) groups = split(head);
  else {
    const [left, right] = [split(head), split(tail)];
    groups = [...left, ...Array<string>(8 - left.length - right.length).fill('0'), ...right];
  }
  return `${groups
    .slice(0, 4)
    .map((g) => g.replace(/^0+(?=.)/, ''))
    .join(':')}::/64`;
}

/**
 * Limits per key (requests and new deliberations a minute, batch items an hour) and per client
 * address (wrong API keys a minute), each a sliding window in Redis, so in any window at most the
 * limit is admitted however many gateway replicas serve the caller. A limit of 0 switches it off.
 *
 * When Redis cannot answer: plain requests and wrong keys are counted in this process instead
 * (per replica, so reads keep working and stay bounded); new deliberations and batch items are
 * refused with 503 (they would be queued in Redis anyway, and must not go uncounted).
 */
@Injectable()
export class RateLimiter {
  private readonly logger = new Logger('rate-limit');
  /** The counts every replica shares. */
  private readonly log: RedisSlidingLog;
  private readonly memory: MemorySlidingLog;
  private readonly now: (() => number) | null;
  private lastWarning = 0;

  constructor(
    @Inject(CONFIG) private readonly config: ConclaveConfig,
    @Inject(REDIS_PRODUCER) redis: RedisClient,
    @Optional() @Inject(RATE_LIMITER_OPTIONS) options: RateLimiterOptions = {},
  ) {
    this.now = options.now ?? null;
    this.log = new RedisSlidingLog(redis, config.redisPrefix, {
      now: this.now,
      timeoutMs: options.redisTimeoutMs ?? 1000,
    });
    this.memory = new MemorySlidingLog(options.memoryMaxKeys ?? 50_000);
  }

  private rule(bucket: RateBucket): Rule {
    const { abuse } = this.config;
    switch (bucket) {
      case 'requests':
        return {
          name: bucket,
          limit: abuse.requestsPerMinute,
          windowMs: MINUTE_MS,
          what: 'requests',
          per: 'a minute',
          setting: 'RATE_LIMIT_REQUESTS_PER_MINUTE',
          withoutRedis: 'memory',
        };
      case 'deliberations':
        return {
          name: bucket,
          limit: abuse.deliberationsPerMinute,
          windowMs: MINUTE_MS,
          what: 'new deliberations',
          per: 'a minute',
          setting: 'RATE_LIMIT_DELIBERATIONS_PER_MINUTE',
          withoutRedis: 'closed',
        };
      case 'batchItems':
        return {
          name: bucket,
          limit: abuse.batchItemsPerHour,
          windowMs: HOUR_MS,
          what: 'batch items',
          per: 'an hour',
          setting: 'RATE_LIMIT_BATCH_ITEMS_PER_HOUR',
          withoutRedis: 'closed',
        };
    }
  }

  private get authRule(): Rule {
    return {
      name: 'auth-failures',
      limit: this.config.authMode === 'apikey' ? this.config.abuse.authFailuresPerMinute : 0,
      windowMs: MINUTE_MS,
      what: 'failed authentications from your address',
      per: 'a minute',
      setting: 'AUTH_FAILURES_PER_MINUTE',
      withoutRedis: 'memory',
    };
  }

  /**
   * Counts `cost` uses (1 by default; a batch takes one per item); throws a 429 RateLimited (with
   * `retryAfterSeconds`: when the cost fits again) when the user is over the limit, a 400 when the
   * cost can never fit, a 503 when Redis cannot count a bucket that fails closed.
   */
  async take(userId: string, bucket: RateBucket, cost = 1): Promise<void> {
    await this.takeReturnable(userId, bucket, cost);
  }

  /** `take`, answering what it counted in Redis (null when nothing was), for `giveBack`. */
  async takeReturnable(userId: string, bucket: RateBucket, cost = 1): Promise<RateTaken | null> {
    const rule = this.rule(bucket);
    if (rule.limit === 0 || cost <= 0) return null;
    if (!Number.isInteger(cost)) throw new Error(`rate limit cost must be a whole number, got ${cost}`);
    if (cost > rule.limit) {
      throw ApiError.invalid({
        items: `${cost} ${rule.what} are more than the ${rule.limit} allowed ${rule.per} (${rule.setting}): send at most ${rule.limit} at a time`,
      });
    }
    const verdict = await this.count(rule, userId, cost, false);
    if (verdict.admitted)
      return verdict.member ? { rule: rule.name, subject: userId, member: verdict.member } : null;
    const retryAfterSeconds = seconds(verdict.waitMs);
    const left = Math.max(0, rule.limit - verdict.used);
    throw new RateLimited(
      bucket === 'batchItems'
        ? `Too many batch items: at most ${rule.limit} ${rule.what} ${rule.per} (${rule.setting}), ${left} left now; ` +
            `a batch of ${cost} fits in ${retryAfterSeconds} s`
        : `Too many ${rule.what}: at most ${rule.limit} ${rule.per}; try again in ${retryAfterSeconds} s`,
      retryAfterSeconds,
    );
  }

  /**
   * Gives back what `take` counted (a batch refused after its items were counted, so that its
   * resubmission is not refused for items that never ran). Redis away: tried again every 5 s for a
   * minute, then left to expire with its window. Never throws.
   */
  async giveBack(taken: RateTaken | null, tries = 12): Promise<void> {
    if (!taken) return;
    try {
      await this.log.giveBack(taken.rule, taken.subject, taken.member);
    } catch (error) {
      if (tries <= 1) {
        this.logger.warn(`could not give back ${taken.rule} counted for a refused request: ${String(error)}`);
        return;
      }
      setTimeout(() => void this.giveBack(taken, tries - 1), 5000).unref();
    }
  }

  /**
   * Before looking an API key up: throws a 429 RateLimited when the client's address has had
   * `AUTH_FAILURES_PER_MINUTE` wrong keys in the last minute. Counts nothing itself.
   */
  async assertAuthAllowed(address: string): Promise<void> {
    const rule = this.authRule;
    if (rule.limit === 0) return;
    const verdict = await this.count(rule, addressSubject(address), 0, false);
    if (verdict.admitted) return;
    const retryAfterSeconds = seconds(verdict.waitMs);
    throw new RateLimited(
      `Too many ${rule.what}: at most ${rule.limit} ${rule.per}; try again in ${retryAfterSeconds} s`,
      retryAfterSeconds,
    );
  }

  /** After a key was looked up and refused: counts one failure for the address. Never throws. */
  async recordAuthFailure(address: string): Promise<void> {
    const rule = this.authRule;
    if (rule.limit === 0) return;
    await this.count(rule, addressSubject(address), 1, true).catch(() => undefined);
  }

  /**
   * The client's address as Express's `req.ip` gives it with `trust proxy` set to TRUST_PROXY_HOPS:
   * the peer's address, or, behind N trusted proxies, the Nth address of X-Forwarded-For counted
   * from the right (the leftmost when there are fewer). Works for a Socket.IO handshake
   * (`socket.request`) too.
   */
  clientAddress(request: IncomingMessage): string {
    const peer = request.socket?.remoteAddress ?? '';
    const hops = this.config.abuse.trustProxyHops;
    if (hops === 0) return peer;
    const header = request.headers['x-forwarded-for'];
    const forwarded = (Array.isArray(header) ? header.join(',') : (header ?? ''))
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean)
      .reverse();
    const chain = [peer, ...forwarded];
    return chain[Math.min(hops, chain.length - 1)];
  }

  private async count(rule: Rule, subject: string, cost: number, force: boolean): Promise<SlidingVerdict> {
    try {
      return await this.log.count(rule, subject, cost, force);
    } catch (error) {
      this.warn(rule, error);
      if (rule.withoutRedis === 'closed') {
        throw new ApiError(
          503,
          `Rate limiting is unavailable right now, so no ${rule.what} are accepted; try again in a few seconds`,
        );
      }
      return this.memory.check(`${rule.name}:${subject}`, rule, cost, force, this.now?.() ?? Date.now());
    }
  }

  /** One warning per 10 s at most: an outage must not flood the log. */
  private warn(rule: Rule, error: unknown): void {
    const now = Date.now();
    if (now - this.lastWarning < 10_000) return;
    this.lastWarning = now;
    this.logger.warn(
      `Redis cannot count ${rule.name} (${error instanceof Error ? error.message : String(error)}): until it ` +
        'answers, requests and wrong keys are counted per replica and new deliberations and batches get 503',
    );
  }
}

/** Whole seconds, rounded up, at least 1: a client that waits this long finds room. */
const seconds = (ms: number) => Math.max(1, Math.ceil(ms / 1000));

export class RateLimited extends ApiError {
  declare readonly retryAfterSeconds: number;

  constructor(message: string, retryAfterSeconds: number) {
    super(429, message, undefined, { retryAfterSeconds });
  }
}
