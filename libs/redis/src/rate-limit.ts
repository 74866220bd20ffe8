import { randomBytes } from 'node:crypto';
import { withTimeout, type RedisClient } from './connection';
import { luaScript, runLua } from './lua';

/**
 * Sliding-window counting for rate limits (the gateway's RateLimiter decides what is limited and
 * what to answer): per subject, a log of admissions in Redis, shared by every gateway replica
 * (RedisSlidingLog), and the same log in memory for when Redis cannot count (MemorySlidingLog).
 */

/** One limit's window: at most `limit` cost in any `windowMs`. `name` keys its logs. */
export interface SlidingWindow {
  name: string;
  limit: number;
  windowMs: number;
}

export interface SlidingVerdict {
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

/**
 * The two keys of one subject's sliding log (KEYS of SLIDING_LOG): both carry the hash tag
 * `{<rule>:<subject>}` (or the prefix's own, when it holds one), so the script runs on a Redis
 * Cluster, and subjects spread over its slots.
 */
export function rateLimitKeys(prefix: string, rule: string, subject: string): [log: string, total: string] {
  const base = `${prefix}:ratelimit:{${rule}:${subject}}`;
  return [`${base}:log`, `${base}:total`];
}

/**
 * The same sliding log in this process's memory, for when Redis cannot count (a gateway's
 * fallback: per replica). `key` names the window and the subject.
 */
export class MemorySlidingLog {
  /** Per subject, least recently used first: its window and its admissions, oldest first. */
  private readonly logs = new Map<string, { windowMs: number; entries: { at: number; cost: number }[] }>();
  private lastSweep = 0;

  constructor(private readonly maxKeys: number) {}

  check(key: string, rule: SlidingWindow, cost: number, force: boolean, now: number): SlidingVerdict {
    const entries = (this.logs.get(key)?.entries ?? []).filter((entry) => entry.at > now - rule.windowMs);
    let used = entries.reduce((sum, entry) => sum + entry.cost, 0);
    const need = Math.max(cost, 1);
    let verdict: SlidingVerdict = { admitted: false, used, waitMs: rule.windowMs };
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

export interface RedisSlidingLogOptions {
  /**
   * The clock, in ms since the epoch; only tests inject one. Without it Redis's own clock (`TIME`)
   * decides, so the replicas' clocks never matter.
   */
  now?: (() => number) | null;
  /** How long to wait for Redis before the call rejects (a stalled Redis, not only a dead one). */
  timeoutMs: number;
}

/**
 * Per-subject sliding logs in Redis (SLIDING_LOG), one round trip per count. Every call rejects
 * when Redis does not answer within `timeoutMs`: what counting without Redis means is the caller's.
 */
export class RedisSlidingLog {
  private readonly idPrefix = randomBytes(6).toString('base64url');
  private serial = 0;

  constructor(
    private readonly redis: RedisClient,
    private readonly prefix: string,
    private readonly options: RedisSlidingLogOptions,
  ) {}

  /**
   * Counts `cost` for `subject` in `window` when it fits (0: only asks whether one more would fit;
   * `force`: counts it even over the limit).
   */
  async count(window: SlidingWindow, subject: string, cost: number, force: boolean): Promise<SlidingVerdict> {
    const [logKey, totalKey] = rateLimitKeys(this.prefix, window.name, subject);
    const id = `${this.idPrefix}.${++this.serial}`;
    const now = this.options.now ? this.options.now() : -1;
    const args = [window.limit, window.windowMs, cost, id, now, force ? 1 : 0];
    const reply = await withTimeout(
      runLua(this.redis, SLIDING_LOG, [logKey, totalKey], args),
      this.options.timeoutMs,
    );
    const [admitted, used, waitMs] = reply as [number, number, number];
    return {
      admitted: admitted === 1,
      used,
      waitMs,
      ...(admitted === 1 && cost > 0 ? { member: `${id}:${cost}` } : {}),
    };
  }

  /** Gives back one admission `count` made (its verdict's `member`) of `window` (its name). */
  async giveBack(window: string, subject: string, member: string): Promise<void> {
    const [logKey, totalKey] = rateLimitKeys(this.prefix, window, subject);
    await withTimeout(runLua(this.redis, GIVE_BACK, [logKey, totalKey], [member]), this.options.timeoutMs);
  }
}
