import { randomUUID } from 'node:crypto';
import {
  ModelCallError,
  modelCallErrorFromAbort,
  type FleetLease,
  type FleetLimiter,
  type LimitScope,
  type ProviderLimits,
  type RateLimit,
} from '@conclave/llm';
import type { RedisClient } from './connection';
import { luaScript, runLua } from './lua';

export interface RedisFleetLimiterOptions {
  /**
   * How long a lease lives without renewal. A holder renews its leases while the call runs,
   * so this only bounds how long a killed worker's slots stay taken.
   */
  leaseTtlMs?: number;
  /** How often held leases are renewed; default a third of the TTL. */
  renewEveryMs?: number;
  /** Longest single sleep before asking Redis again (cool-downs and rpm waits are exact below it). */
  maxWaitStepMs?: number;
  /** Polling of a full concurrency limit starts here and doubles up to `maxPollMs`. */
  minPollMs?: number;
  maxPollMs?: number;
  /** The per-minute window; only tests shorten it (every worker must use the same). */
  rpmWindowMs?: number;
  random?: () => number;
}

const RPM_WINDOW_MS = 60_000;
const DEFAULTS = {
  leaseTtlMs: 30_000,
  maxWaitStepMs: 1000,
  minPollMs: 20,
  maxPollMs: 250,
};

/** Outcome codes of the acquire script. */
const ACQUIRED = 0;
const COOLING_DOWN = 1;
const RPM_FULL = 2;
const CONCURRENCY_FULL = 3;

/**
 * KEYS[1] cool-down key; then per scope a pair (concurrency zset, rpm zset).
 * ARGV: lease id, lease TTL ms, rpm window ms, then per scope (maxConcurrent, rpm), 0 = none.
 * Returns {code, ms}: {0, 0} admitted, else why not and how long until it may change.
 * Server TIME only, so the workers' clocks never matter.
 */
const ACQUIRE = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local cooldown = redis.call('PTTL', KEYS[1])
if cooldown > 0 then return {1, cooldown} end
local id = ARGV[1]
local ttl = tonumber(ARGV[2])
local window = tonumber(ARGV[3])
local scopes = (#KEYS - 1) / 2
local rpmWait = 0
local concWait = 0
for i = 0, scopes - 1 do
  local conc, rk = KEYS[2 + 2 * i], KEYS[3 + 2 * i]
  local maxConc, rpm = tonumber(ARGV[4 + 2 * i]), tonumber(ARGV[5 + 2 * i])
  if maxConc > 0 then
    redis.call('ZREMRANGEBYSCORE', conc, '-inf', now)
    if redis.call('ZCARD', conc) >= maxConc then
      local first = redis.call('ZRANGE', conc, 0, 0, 'WITHSCORES')
      local wait = tonumber(first[2]) - now
      if concWait == 0 or wait < concWait then concWait = wait end
    end
  end
  if rpm > 0 then
    redis.call('ZREMRANGEBYSCORE', rk, '-inf', now - window)
    if redis.call('ZCARD', rk) >= rpm then
      local first = redis.call('ZRANGE', rk, 0, 0, 'WITHSCORES')
      local wait = tonumber(first[2]) + window - now
      if wait > rpmWait then rpmWait = wait end
    end
  end
end
if rpmWait > 0 then return {2, rpmWait} end
if concWait > 0 then return {3, concWait} end
for i = 0, scopes - 1 do
  local conc, rk = KEYS[2 + 2 * i], KEYS[3 + 2 * i]
  if tonumber(ARGV[4 + 2 * i]) > 0 then
    redis.call('ZADD', conc, now + ttl, id)
    if redis.call('PTTL', conc) < ttl + 1000 then redis.call('PEXPIRE', conc, ttl + 1000) end
  end
  if tonumber(ARGV[5 + 2 * i]) > 0 then
    redis.call('ZADD', rk, now, id)
    redis.call('PEXPIRE', rk, window + 1000)
  end
end
return {0, 0}
`;

/** KEYS: concurrency zsets. ARGV: lease id, TTL ms. Extends the lease where it still exists. */
const RENEW = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ttl = tonumber(ARGV[2])
local renewed = 0
for _, key in ipairs(KEYS) do
  if redis.call('ZSCORE', key, ARGV[1]) then
    redis.call('ZADD', key, 'XX', now + ttl, ARGV[1])
    if redis.call('PTTL', key) < ttl + 1000 then redis.call('PEXPIRE', key, ttl + 1000) end
    renewed = renewed + 1
  end
end
return renewed
`;

/** KEYS: concurrency zsets. ARGV: lease id. */
const RELEASE = `
local removed = 0
for _, key in ipairs(KEYS) do removed = removed + redis.call('ZREM', key, ARGV[1]) end
return removed
`;

/** KEYS[1]: cool-down key. ARGV: ms. Only ever lengthens a running cool-down. */
const PENALIZE = `
local ms = tonumber(ARGV[1])
local current = redis.call('PTTL', KEYS[1])
if current < ms then
  redis.call('SET', KEYS[1], '1', 'PX', ms)
  return ms
end
return current
`;

const SCRIPTS = {
  acquire: luaScript(ACQUIRE),
  renew: luaScript(RENEW),
  release: luaScript(RELEASE),
  penalize: luaScript(PENALIZE),
};

class RedisLease implements FleetLease {
  renewal: NodeJS.Timeout | null = null;
  constructor(
    readonly id: string,
    readonly provider: string,
    /** The concurrency zsets holding this lease (empty when no concurrency limit applies). */
    readonly concurrencyKeys: string[],
  ) {}
}

/** The keys (KEYS of the acquire script) and limits of one call's scope. */
export interface Plan {
  keys: string[];
  limits: number[];
  concurrencyKeys: string[];
}

/**
 * The keys of one provider's limits: the cool-down first, then (concurrency, rpm) of the provider
 * and of the model where limits apply. All of them carry the hash tag `{<provider>}` (or the
 * prefix's own, when it holds one), so the scripts that touch them together run on a Redis Cluster.
 */
export function fleetLimitPlan(prefix: string, limits: ProviderLimits, scope: LimitScope): Plan {
  const base = `${prefix}:limits:{${scope.provider}}`;
  const keys = [`${base}:cooldown`];
  const values: number[] = [];
  const concurrencyKeys: string[] = [];
  const add = (keyBase: string, limit: RateLimit): void => {
    keys.push(`${keyBase}:concurrent`, `${keyBase}:rpm`);
    values.push(limit.maxConcurrent ?? 0, limit.rpm ?? 0);
    if (limit.maxConcurrent) concurrencyKeys.push(`${keyBase}:concurrent`);
  };
  const providerLimit = ownEntry(limits.providers, scope.provider);
  if (providerLimit) add(base, providerLimit);
  const modelLimit = scope.model !== undefined ? ownEntry(limits.models, scope.model) : undefined;
  if (modelLimit) add(`${base}:model:${scope.model}`, modelLimit);
  return { keys, limits: values, concurrencyKeys };
}

/**
 * FleetLimiter over Redis, shared by every worker using the same Redis and prefix.
 * Keys (all of one provider in one cluster slot, `{provider}`):
 * `<prefix>:limits:{<provider>}:cooldown` (a PX key, only ever lengthened),
 * `…:concurrent` and `…:rpm` (sorted sets of lease ids, scored by expiry and by start), and the
 * same two under `…:model:<model id>:` for model limits.
 */
export class RedisFleetLimiter implements FleetLimiter {
  private readonly leaseTtlMs: number;
  private readonly renewEveryMs: number;
  private readonly maxWaitStepMs: number;
  private readonly minPollMs: number;
  private readonly maxPollMs: number;
  private readonly rpmWindowMs: number;
  private readonly random: () => number;
  private readonly held = new Set<RedisLease>();
  /** This process's acquires waiting for a concurrency slot, per provider, oldest first. */
  private readonly waiters = new Map<string, Set<() => void>>();

  constructor(
    private readonly redis: RedisClient,
    private readonly prefix: string,
    private readonly limits: ProviderLimits,
    options: RedisFleetLimiterOptions = {},
  ) {
    this.leaseTtlMs = options.leaseTtlMs ?? DEFAULTS.leaseTtlMs;
    this.renewEveryMs = options.renewEveryMs ?? Math.max(1, Math.floor(this.leaseTtlMs / 3));
    this.maxWaitStepMs = options.maxWaitStepMs ?? DEFAULTS.maxWaitStepMs;
    this.minPollMs = options.minPollMs ?? DEFAULTS.minPollMs;
    this.maxPollMs = options.maxPollMs ?? DEFAULTS.maxPollMs;
    this.rpmWindowMs = options.rpmWindowMs ?? RPM_WINDOW_MS;
    this.random = options.random ?? Math.random;
  }

  async acquire(scope: LimitScope, signal: AbortSignal): Promise<FleetLease> {
    const plan = this.plan(scope);
    const id = randomUUID();
    let poll = this.minPollMs;
    for (;;) {
      if (signal.aborted) throw modelCallErrorFromAbort(signal);
      const attempt = runLua(this.redis, SCRIPTS.acquire, plan.keys, [
        id,
        this.leaseTtlMs,
        this.rpmWindowMs,
        ...plan.limits,
      ]);
      let reply: unknown;
      try {
        reply = await raceAbort(attempt, signal);
      } catch (error) {
        if (signal.aborted) {
          // The script may still admit us after the caller gave up: hand the slot back.
          if (plan.concurrencyKeys.length > 0) {
            void attempt
              .then(() => runLua(this.redis, SCRIPTS.release, plan.concurrencyKeys, [id]))
              .catch(() => undefined);
          }
          throw modelCallErrorFromAbort(signal);
        }
        throw limiterError(error);
      }
      const [code, ms] = parseReply(reply);
      let wait: number;
      switch (code) {
        case ACQUIRED:
          return this.hold(new RedisLease(id, scope.provider, plan.concurrencyKeys));
        case CONCURRENCY_FULL:
          // Slots free on release, not on a schedule: poll, backing off, never past the expiry.
          wait = Math.min(poll, ms);
          poll = Math.min(poll * 2, this.maxPollMs);
          break;
        case COOLING_DOWN:
        case RPM_FULL:
          // These waits are exact; the jitter spreads the herd that wakes together.
          wait = ms + Math.floor(this.random() * this.minPollMs);
          break;
        default:
          throw limiterError(new Error(`unexpected acquire outcome ${code}`));
      }
      const step = Math.max(1, Math.min(wait, this.maxWaitStepMs));
      // Only a wait for a slot ends early when one is released here.
      const woken = await this.pause(code === CONCURRENCY_FULL ? scope.provider : null, step, signal);
      if (woken) poll = this.minPollMs;
    }
  }

  async release(lease: FleetLease): Promise<void> {
    if (!(lease instanceof RedisLease)) return;
    this.unhold(lease);
    if (lease.concurrencyKeys.length === 0) return;
    try {
      await runLua(this.redis, SCRIPTS.release, lease.concurrencyKeys, [lease.id]);
    } catch {
      // The lease expires on its own once no longer renewed.
      return;
    }
    // A slot this process freed goes to this process's longest waiter at once; other workers poll.
    const first = this.waiters.get(lease.provider)?.values().next();
    if (first && !first.done) first.value();
  }

  async penalize(provider: string, ms: number): Promise<void> {
    const duration = Math.ceil(ms);
    if (!(duration > 0)) return;
    await runLua(this.redis, SCRIPTS.penalize, [this.cooldownKey(provider)], [duration]);
  }

  /** Stops renewing held leases without releasing them (they expire after the lease TTL). */
  close(): void {
    for (const lease of this.held) this.unhold(lease);
  }

  /**
   * Sleeps `ms`, or less when a slot of `provider` (if given) is released here (then resolves
   * true). Rejects with the abort's ModelCallError as soon as `signal` fires.
   */
  private pause(provider: string | null, ms: number, signal: AbortSignal): Promise<boolean> {
    return new Promise<boolean>((resolve, reject) => {
      if (signal.aborted) {
        reject(modelCallErrorFromAbort(signal));
        return;
      }
      let queue: Set<() => void> | undefined;
      if (provider !== null) {
        queue = this.waiters.get(provider);
        if (!queue) this.waiters.set(provider, (queue = new Set()));
      }
      const finish = (): void => {
        clearTimeout(timer);
        signal.removeEventListener('abort', onAbort);
        if (!queue || provider === null) return;
        queue.delete(wake);
        if (queue.size === 0 && this.waiters.get(provider) === queue) this.waiters.delete(provider);
      };
      const wake = (): void => {
        finish();
        resolve(true);
      };
      const onAbort = (): void => {
        finish();
        reject(modelCallErrorFromAbort(signal));
      };
      const timer = setTimeout(() => {
        finish();
        resolve(false);
      }, ms);
      signal.addEventListener('abort', onAbort, { once: true });
      queue?.add(wake);
    });
  }

  private plan(scope: LimitScope): Plan {
    return fleetLimitPlan(this.prefix, this.limits, scope);
  }

  private cooldownKey(provider: string): string {
    return fleetLimitPlan(this.prefix, { providers: {}, models: {} }, { provider }).keys[0];
  }

  private hold(lease: RedisLease): RedisLease {
    if (lease.concurrencyKeys.length > 0) {
      lease.renewal = setInterval(() => {
        runLua(this.redis, SCRIPTS.renew, lease.concurrencyKeys, [lease.id, this.leaseTtlMs]).catch(
          () => undefined,
        );
      }, this.renewEveryMs);
      lease.renewal.unref();
      this.held.add(lease);
    }
    return lease;
  }

  private unhold(lease: RedisLease): void {
    if (lease.renewal) clearInterval(lease.renewal);
    lease.renewal = null;
    this.held.delete(lease);
  }
}

function ownEntry(record: Readonly<Record<string, RateLimit>>, key: string): RateLimit | undefined {
  return Object.hasOwn(record, key) ? record[key] : undefined;
}

function parseReply(reply: unknown): [number, number] {
  if (Array.isArray(reply) && typeof reply[0] === 'number' && typeof reply[1] === 'number') {
    return [reply[0], reply[1]];
  }
  throw new ModelCallError(`Provider limiter: unexpected reply ${JSON.stringify(reply)}`, 'network', true);
}

function limiterError(error: unknown): ModelCallError {
  if (error instanceof ModelCallError) return error;
  const message = error instanceof Error ? error.message : String(error);
  return new ModelCallError(`Provider limiter unavailable: ${message}`, 'network', true);
}

/** Settles like `promise`, or rejects as soon as `signal` aborts (the promise runs on). */
function raceAbort<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(modelCallErrorFromAbort(signal));
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(modelCallErrorFromAbort(signal));
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}
