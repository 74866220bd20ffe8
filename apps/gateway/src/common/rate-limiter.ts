import { randomBytes } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { isIPv4, isIPv6 } from 'node:net';
import { Inject, Injectable, Logger, Optional } from '@nestjs/common';
import type { ConclaveConfig } from '@conclave/config';
import { CONFIG, REDIS_PRODUCER } from '@conclave/platform';
import { luaScript, runLua, withTimeout, type RedisClient } from '@conclave/redis';
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

/** What one limit counts, and what the limiter does when Redis cannot count. */
interface Rule {
  name: string;
  limit: number;
  windowMs: number;
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

interface Verdict {
  admitted: boolean;
  /** The admission's member in the Redis log (counted there, with a cost): what giveBack removes. */
  member?: string;
  /** Cost in the window after this call. */
  used: number;
  /** When refused: ms until the cost fits. */
  waitMs: number;
}

/**
 * A sliding log, atomic in one round trip. KEYS[1]: sorted set of admissions (member
 * "<id>:<cost>", score = admission time in ms); KEYS[2]: the sum of their costs.
 * ARGV: limit, window ms, cost (0: only ask whether one more would fit), unique id,
 * now in ms (negative: Redis's clock), 1 to record the cost even over the limit.
 * An admission at time s counts while now - window < s, so any window of `window` ms holds at most
 * `limit`. Refusals are not recorded: a client that keeps trying is admitted once room frees.
 * Returns {admitted 1|0, used, ms until `cost` fits (0 when admitted)}.
 */
const SLIDING_LOG = luaScript(`
local log, total = KEYS[1], KEYS[2]
local limit, window, cost = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local now = tonumber(ARGV[5])
if now < 0 then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local function costOf(member) return tonumber(string.match(member, ':(%d+)$')) end
local stored = redis.call('GET', total)
local expired = redis.call('ZRANGEBYSCORE', log, '-inf', now - window)
if #expired > 0 then redis.call('ZREMRANGEBYSCORE', log, '-inf', now - window) end
local used = 0
if redis.call('ZCARD', log) == 0 then
  if stored then redis.call('DEL', total) end
else
  if stored then
    used = tonumber(stored)
    for _, member in ipairs(expired) do used = used - costOf(member) end
  end
  if not stored or used <= 0 then
    used = 0
    for _, member in ipairs(redis.call('ZRANGE', log, 0, -1)) do used = used + costOf(member) end
  end
  if not stored or #expired > 0 then
    local ttl = redis.call('PTTL', log)
    if ttl <= 0 then ttl = window + 1000 end
    redis.call('SET', total, used, 'PX', ttl)
  end
end
local need = cost
if need == 0 then need = 1 end
if used + need <= limit or ARGV[6] == '1' then
  if cost > 0 then
    redis.call('ZADD', log, now, ARGV[4] .. ':' .. cost)
    used = used + cost
    redis.call('SET', total, used, 'PX', window + 1000)
    redis.call('PEXPIRE', log, window + 1000)
  end
  return {1, used, 0}
end
local excess = used + need - limit
local freed = 0
local from = 0
while true do
  local page = redis.call('ZRANGE', log, from, from + 99, 'WITHSCORES')
  if #page == 0 then break end
  for i = 1, #page, 2 do
    freed = freed + costOf(page[i])
    if freed >= excess then return {0, used, tonumber(page[i + 1]) + window - now} end
  end
  from = from + 100
end
return {0, used, window}
`);

/**
 * Gives back one admission of SLIDING_LOG (KEYS the same; ARGV[1] its member "<id>:<cost>"): it
 * leaves the log, and the cached sum goes (the next count sums the log again). 1 if it was there.
 */
const GIVE_BACK = luaScript(`
if redis.call('ZREM', KEYS[1], ARGV[1]) == 0 then return 0 end
redis.call('DEL', KEYS[2])
return 1
`);

/** What `take` counted in Redis, to give back (`giveBack`) when what it paid for was refused after all. */
export interface RateTaken {
  readonly rule: string;
  readonly subject: string;
  readonly member: string;
}

/**
 * The two keys of one subject's sliding log (KEYS of SLIDING_LOG): both carry the hash tag
 * `{<rule>:<subject>}` (or the prefix's own, when it holds one), so the script runs on a Redis
 * Cluster, and subjects spread over its slots.
 */
export function rateLimitKeys(prefix: string, rule: string, subject: string): [log: string, total: string] {
  const base = `${prefix}:ratelimit:{${rule}:${subject}}`;
  return [`${base}:log`, `${base}:total`];
}

/** The same sliding log in this process's memory, for when Redis cannot count. */
class MemoryLog {
  /** Per subject, least recently used first: its window and its admissions, oldest first. */
  private readonly logs = new Map<string, { windowMs: number; entries: { at: number; cost: number }[] }>();
  private lastSweep = 0;

  constructor(private readonly maxKeys: number) {}

  check(key: string, rule: Rule, cost: number, force: boolean, now: number): Verdict {
    const entries = (this.logs.get(key)?.entries ?? []).filter((entry) => entry.at > now - rule.windowMs);
    let used = entries.reduce((sum, entry) => sum + entry.cost, 0);
    const need = Math.max(cost, 1);
    let verdict: Verdict = { admitted: false, used, waitMs: rule.windowMs };
    if (used + need <= rule.limit || force) {
      if (cost > 0) {
        entries.push({ at: now, cost });
        used += cost;
      }
      verdict = { admitted: true, used, waitMs: 0 };
    } else {
      let freed = 0;
      for (const entry of entries) {
        freed += entry.cost;
        if (freed < used + need - rule.limit) continue;
        verdict = { admitted: false, used, waitMs: entry.at + rule.windowMs - now };
        break;
      }
    }
    this.logs.delete(key);
    if (entries.length > 0) this.logs.set(key, { windowMs: rule.windowMs, entries });
    this.trim(now);
    return verdict;
  }

  /** Drops subjects whose window is empty (every 10 s at most), then the least recently used. */
  private trim(now: number): void {
    if (now - this.lastSweep >= 10_000) {
      this.lastSweep = now;
      for (const [key, { windowMs, entries }] of this.logs)
        if (entries[entries.length - 1].at <= now - windowMs) this.logs.delete(key);
    }
    for (const key of this.logs.keys()) {
      if (this.logs.size <= this.maxKeys) break;
      this.logs.delete(key);
    }
  }
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
  private readonly memory: MemoryLog;
  private readonly now: (() => number) | null;
  private readonly redisTimeoutMs: number;
  private readonly idPrefix = randomBytes(6).toString('base64url');
  private serial = 0;
  private lastWarning = 0;

  constructor(
    @Inject(CONFIG) private readonly config: ConclaveConfig,
    @Inject(REDIS_PRODUCER) private readonly redis: RedisClient,
    @Optional() @Inject(RATE_LIMITER_OPTIONS) options: RateLimiterOptions = {},
  ) {
    this.now = options.now ?? null;
    this.redisTimeoutMs = options.redisTimeoutMs ?? 1000;
    this.memory = new MemoryLog(options.memoryMaxKeys ?? 50_000);
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
    const [logKey, totalKey] = rateLimitKeys(this.config.redisPrefix, taken.rule, taken.subject);
    try {
      await withTimeout(
        runLua(this.redis, GIVE_BACK, [logKey, totalKey], [taken.member]),
        this.redisTimeoutMs,
      );
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

  private async count(rule: Rule, subject: string, cost: number, force: boolean): Promise<Verdict> {
    const [logKey, totalKey] = rateLimitKeys(this.config.redisPrefix, rule.name, subject);
    const id = `${this.idPrefix}.${++this.serial}`;
    const args = [rule.limit, rule.windowMs, cost, id, this.now ? this.now() : -1, force ? 1 : 0];
    let reply: unknown;
    try {
      reply = await withTimeout(
        runLua(this.redis, SLIDING_LOG, [logKey, totalKey], args),
        this.redisTimeoutMs,
      );
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
    const [admitted, used, waitMs] = reply as [number, number, number];
    return {
      admitted: admitted === 1,
      used,
      waitMs,
      ...(admitted === 1 && cost > 0 ? { member: `${id}:${cost}` } : {}),
    };
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
