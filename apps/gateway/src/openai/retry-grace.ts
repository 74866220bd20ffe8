import { luaScript, readJson, runLua, type RedisClient } from '@conclave/redis';

/**
 * Safe retries on /v1 (README, "OpenAI-compatible endpoint"): a chat request sent with an
 * Idempotency-Key whose client goes away leaves its deliberation running for V1_RETRY_GRACE_MS, so a
 * retry with the same key (on any gateway replica) reattaches; with no retry by then, the run is
 * cancelled.
 *
 * The state is one Redis sorted set shared by every gateway: a member per deliberation, scored by
 * the time (Redis's clock, ms) at which it is to be cancelled unless someone is following it again.
 * While a gateway has a client following the run, it keeps pushing that time forward (every `tick`,
 * to `lease + grace` ahead); when its last client of the run goes away it sets the time to `grace`
 * ahead; a run that ended is taken out. Every gateway sweeps the set each tick, takes out what is
 * due (atomically: one gateway gets each) and cancels it. So a gateway that dies with clients
 * attached stops renewing, and its runs are cancelled by another gateway `lease + grace` after its
 * last renewal; a gateway that restarts sweeps what was due meanwhile.
 */

/** How often a gateway renews and sweeps, and how far ahead a followed run's time is kept. */
export interface GraceTiming {
  graceMs: number;
  /** Renewals and sweeps, a quarter of the grace apart (250 ms to 5 s). */
  tickMs: number;
  /** How long a renewal holds beyond the grace: three ticks, so one late renewal costs nothing. */
  leaseMs: number;
}

/** The timing for a grace (V1_RETRY_GRACE_MS); null when it is 0 (a disconnect cancels at once). */
export function graceTiming(graceMs: number): GraceTiming | null {
  if (graceMs <= 0) return null;
  const tickMs = Math.min(5_000, Math.max(250, Math.floor(graceMs / 4)));
  return { graceMs, tickMs, leaseMs: 3 * tickMs };
}

/** The deliberation a member stands for (and its owner: the cancel is the user's own stop). */
export interface GraceRun {
  userId: string;
  messageId: string;
}

export const graceMember = (run: GraceRun): string => JSON.stringify([run.userId, run.messageId]);

/** The run of a member; null for anything this code did not write. */
export function parseGraceMember(member: string): GraceRun | null {
  const value = readJson(member);
  if (!Array.isArray(value) || value.length !== 2) return null;
  const [userId, messageId] = value as unknown[];
  if (typeof userId !== 'string' || typeof messageId !== 'string' || !userId || !messageId) return null;
  return { userId, messageId };
}

/** The one key of the set: a single key, so every script runs on a Redis Cluster too. */
export const retryGraceKey = (redisPrefix: string): string => `${redisPrefix}:v1-retry:deadlines`;

/**
 * KEYS[1]: the set. ARGV[1]: ms ahead of Redis's clock; ARGV[2]: 'later' (only ever moves a time
 * later: a renewal) or 'set'; ARGV[3..]: members. Returns how many times were written.
 */
const SCHEDULE = `
local t = redis.call('TIME')
local at = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) + tonumber(ARGV[1])
local written = 0
for i = 3, #ARGV do
  local current = redis.call('ZSCORE', KEYS[1], ARGV[i])
  if ARGV[2] == 'set' or not current or tonumber(current) < at then
    redis.call('ZADD', KEYS[1], at, ARGV[i])
    written = written + 1
  end
end
return written
`;

/** KEYS[1]: the set. ARGV[1]: at most this many. Takes out the members due by Redis's clock and returns them. */
const CLAIM_DUE = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, tonumber(ARGV[1]))
if #due > 0 then redis.call('ZREM', KEYS[1], unpack(due)) end
return due
`;

const SCRIPTS = { schedule: luaScript(SCHEDULE), claimDue: luaScript(CLAIM_DUE) };

/** Members per script call: a renewal of thousands of followed runs is a few calls, not one huge one. */
const BATCH = 500;

/** The shared set of cancel times (see the top of this file). */
export class GraceDeadlines {
  readonly key: string;

  constructor(
    private readonly redis: RedisClient,
    redisPrefix: string,
  ) {
    this.key = retryGraceKey(redisPrefix);
  }

  /** Moves each member's time to `aheadMs` from now, unless it is later already (a renewal). */
  postpone(members: readonly string[], aheadMs: number): Promise<void> {
    return this.schedule(members, aheadMs, 'later');
  }

  /** Sets each member's time to `aheadMs` from now, earlier or later than it was (its last client left). */
  set(members: readonly string[], aheadMs: number): Promise<void> {
    return this.schedule(members, aheadMs, 'set');
  }

  /** The schedule script over `members`, BATCH at a time. */
  private async schedule(members: readonly string[], aheadMs: number, how: 'later' | 'set'): Promise<void> {
    for (let i = 0; i < members.length; i += BATCH) {
      await runLua(
        this.redis,
        SCRIPTS.schedule,
        [this.key],
        [Math.round(aheadMs), how, ...members.slice(i, i + BATCH)],
      );
    }
  }

  async remove(member: string): Promise<void> {
    await this.redis.zrem(this.key, member);
  }

  /** Takes out up to `limit` members whose time has come; each is handed to one caller only. */
  async claimDue(limit: number): Promise<string[]> {
    const reply = await runLua(this.redis, SCRIPTS.claimDue, [this.key], [limit]);
    return Array.isArray(reply) ? reply.filter((m): m is string => typeof m === 'string') : [];
  }

  /** When a member is due (ms since the epoch, Redis's clock), or null when it is not in the set. */
  async dueAt(member: string): Promise<number | null> {
    const score = await this.redis.zscore(this.key, member);
    return score === null ? null : Number(score);
  }
}

/** What a /v1 request following a run with an Idempotency-Key tells the keeper, once. */
export interface RetryAttachment {
  /** Its client went away before the answer: the run gets the grace. */
  detach(): void;
  /** The run ended (answered, or nothing more to wait for), or it is being cancelled now. */
  end(): void;
}

export interface GraceKeeperDeps {
  deadlines: GraceDeadlines;
  timing: GraceTiming;
  /**
   * The user's stop of a run (CancelService.cancel), with `reason` as its error (null: the plain
   * user's stop). Resolves when it is stopped or had ended already; rejects when it could not be.
   */
  cancel: (run: GraceRun, reason: string | null) => Promise<void>;
  warn: (message: string) => void;
}

/** The error of a run cancelled because nobody came back for it. */
export const graceExpiredReason = (graceMs: number): string =>
  `Its client went away and no retry with the same Idempotency-Key came within ${formatSeconds(graceMs)} (V1_RETRY_GRACE_MS).`;

const formatSeconds = (ms: number): string => {
  const seconds = Math.round(ms / 100) / 10;
  return `${seconds} ${seconds === 1 ? 'second' : 'seconds'}`;
};

/** Runs claimed per sweep call; a sweep goes on while full batches come back. */
const SWEEP_BATCH = 100;

/**
 * This gateway's side of the grace: which runs its clients follow (renewed every tick), what they
 * leave behind, and the sweep that cancels runs nobody came back for. Plain TypeScript over
 * GraceDeadlines; RetryGraceService runs its ticks.
 */
export class GraceKeeper {
  /** Member → how many of this gateway's requests follow it. */
  private readonly followed = new Map<string, number>();
  private ticking: Promise<void> | null = null;
  private closing = false;

  constructor(private readonly deps: GraceKeeperDeps) {}

  /** A request follows a run. Its time is pushed forward now: a gateway dying from here on still ends it. */
  attach(run: GraceRun): RetryAttachment {
    const member = graceMember(run);
    this.followed.set(member, (this.followed.get(member) ?? 0) + 1);
    const { deadlines, timing } = this.deps;
    deadlines
      .postpone([member], timing.leaseMs + timing.graceMs)
      .catch((error: unknown) =>
        this.deps.warn(`could not note ${run.messageId} as followed: ${String(error)}`),
      );
    let released = false;
    const release = (): boolean => {
      if (released) return false;
      released = true;
      const count = (this.followed.get(member) ?? 1) - 1;
      if (count > 0) this.followed.set(member, count);
      else this.followed.delete(member);
      return count === 0 && !this.closing;
    };
    return {
      detach: () => {
        if (!release()) return;
        deadlines.set([member], timing.graceMs).catch((error: unknown) => {
          // Without its time stored the run could outlive everyone: stop it now, as without a key.
          this.deps.warn(`could not give ${run.messageId} its grace, cancelling it: ${String(error)}`);
          void this.cancel(run, null);
        });
      },
      end: () => {
        if (!release()) return;
        deadlines
          .remove(member)
          .catch((error: unknown) => this.deps.warn(`could not forget ${run.messageId}: ${String(error)}`));
      },
    };
  }

  /** How many runs this gateway's requests follow. */
  get followedRuns(): number {
    return this.followed.size;
  }

  /** One renewal and sweep; a tick that finds the previous one still running waits for it instead. */
  tick(): Promise<void> {
    this.ticking ??= this.renewAndSweep().finally(() => {
      this.ticking = null;
    });
    return this.ticking;
  }

  /**
   * The gateway stops: the runs its clients still follow get the grace from now (their clients are
   * about to be cut off and may retry elsewhere), not the lease on top.
   */
  async close(): Promise<void> {
    this.closing = true;
    await this.ticking?.catch(() => undefined);
    const members = [...this.followed.keys()];
    this.followed.clear();
    await this.deps.deadlines
      .set(members, this.deps.timing.graceMs)
      .catch((error: unknown) =>
        this.deps.warn(`could not hand over ${members.length} followed runs: ${String(error)}`),
      );
  }

  private async renewAndSweep(): Promise<void> {
    const { deadlines, timing } = this.deps;
    try {
      await deadlines.postpone([...this.followed.keys()], timing.leaseMs + timing.graceMs);
      for (;;) {
        const due = await deadlines.claimDue(SWEEP_BATCH);
        await Promise.all(due.map((member) => this.expire(member)));
        if (due.length < SWEEP_BATCH) break;
      }
    } catch (error) {
      this.deps.warn(`could not renew or sweep the /v1 retry grace: ${String(error)}`);
    }
  }

  /** A run whose time came: cancelled, unless a request here follows it again (a renewal was late). */
  private async expire(member: string): Promise<void> {
    const run = parseGraceMember(member);
    if (!run) return;
    const { deadlines, timing } = this.deps;
    if (this.followed.has(member)) {
      await deadlines.postpone([member], timing.leaseMs + timing.graceMs);
      return;
    }
    if (!(await this.cancel(run, graceExpiredReason(timing.graceMs)))) {
      // Not stored as cancelled (PostgreSQL away): put it back to be tried again next tick.
      await deadlines.set([member], timing.tickMs);
    }
  }

  /** True once the run is stopped or had ended; false when the cancel could not be made. */
  private async cancel(run: GraceRun, reason: string | null): Promise<boolean> {
    try {
      await this.deps.cancel(run, reason);
      return true;
    } catch (error) {
      this.deps.warn(`could not cancel ${run.messageId} after its grace: ${String(error)}`);
      return false;
    }
  }
}
