import { randomUUID } from 'node:crypto';
import type { RedisClient } from './connection';

/** A model call in flight on a worker, as its lease lists it. */
export interface LeasedCall {
  messageId: string;
  stage: string;
  key: string;
  model: string;
  /** When it began (that worker's clock, ms). */
  startedAt: number;
}

/** A call listed by another worker's lease, with that worker and when the lease was written. */
export interface LeasedCallOf extends LeasedCall {
  worker: string;
  leaseAt: number;
}

/** A call in a lease: [messageId, stage, key, model, startedAt] (small: rewritten every heartbeat). */
type CallTuple = [string, string, string, string, number];

/** What one worker last said it runs, and when (its clock, ms). */
interface Lease {
  at: number;
  running: string[];
  /** The model calls it has in flight (absent from leases of older workers). */
  calls?: CallTuple[];
}

/** The calls of one deliberation a lease lists (malformed entries skipped). */
export function leasedCallsOf(raw: string, messageId: string): { at: number; calls: LeasedCall[] } | null {
  let lease: Lease | null = null;
  try {
    lease = JSON.parse(raw) as Lease;
  } catch {
    return null;
  }
  if (!lease || typeof lease.at !== 'number' || !Array.isArray(lease.calls)) return null;
  const calls: LeasedCall[] = [];
  for (const call of lease.calls) {
    if (!Array.isArray(call) || call[0] !== messageId) continue;
    const [, stage, key, model, startedAt] = call;
    if (typeof stage !== 'string' || typeof key !== 'string' || typeof model !== 'string') continue;
    if (typeof startedAt !== 'number') continue;
    calls.push({ messageId, stage, key, model, startedAt });
  }
  return { at: lease.at, calls };
}

/** `messageId:stage`, as leases list the stages a worker runs (a message id has no `:`). */
export const stageLeaseKey = (messageId: string, stage: string): string => `${messageId}:${stage}`;

/**
 * Two small records next to the stage queue (under its prefix, so in its slot on a cluster) that
 * let workers notice within a heartbeat that Redis lost its data, and tell the stages whose job
 * was lost with it but whose work was not:
 *
 * - the queue's epoch, a key set once (SET NX) and then only read: a heartbeat that finds it gone
 *   means Redis restarted empty or was flushed, so every job it held is gone too;
 * - leases, one hash field per worker: the stages it is running, rewritten every heartbeat, so
 *   that within a heartbeat of Redis's return every live worker's field is back; and the model
 *   calls it has in flight, so that the worker taking over a dead one's stage can count them.
 */
export class QueueWatch {
  private readonly epochKey: string;
  private readonly leasesKey: string;

  constructor(
    private readonly redis: RedisClient,
    queuePrefix: string,
    readonly workerId: string,
  ) {
    this.epochKey = `${queuePrefix}:watch:epoch`;
    this.leasesKey = `${queuePrefix}:watch:leases`;
  }

  /**
   * One heartbeat: renews this worker's lease on the stages it runs, and sets the epoch if it is
   * missing. `lost` is the new epoch when this heartbeat found it missing (this worker is then
   * the one to resume what was lost; another worker's heartbeat finds it set), else null.
   */
  async beat(running: Iterable<string>, calls: LeasedCall[] = []): Promise<{ lost: string | null }> {
    const lease: Lease = {
      at: Date.now(),
      running: [...running],
      calls: calls.map((c) => [c.messageId, c.stage, c.key, c.model, c.startedAt]),
    };
    const epoch = randomUUID();
    const [set] = await Promise.all([
      this.redis.set(this.epochKey, epoch, 'NX'),
      this.redis.hset(this.leasesKey, this.workerId, JSON.stringify(lease)),
    ]);
    return { lost: set === 'OK' ? epoch : null };
  }

  /**
   * The stages (stageLeaseKey) that workers heard from within `maxAgeMs` run. Leases older than a
   * minute (workers gone) are removed.
   */
  async running(maxAgeMs: number): Promise<Set<string>> {
    const fields = await this.redis.hgetall(this.leasesKey);
    const now = Date.now();
    const live = new Set<string>();
    const gone: string[] = [];
    for (const [worker, raw] of Object.entries(fields)) {
      let lease: Lease | null = null;
      try {
        lease = JSON.parse(raw) as Lease;
      } catch {
        // not ours: left alone
      }
      if (!lease || typeof lease.at !== 'number' || !Array.isArray(lease.running)) continue;
      const age = now - lease.at;
      if (age <= maxAgeMs) for (const stage of lease.running) live.add(String(stage));
      else if (age > 60_000) gone.push(worker);
    }
    if (gone.length > 0) await this.redis.hdel(this.leasesKey, ...gone);
    return live;
  }

  /**
   * The model calls of a deliberation that other workers' leases list as in flight (the last
   * heartbeat of a worker that died running its stage lists the calls that died with it).
   */
  async callsOf(messageId: string): Promise<LeasedCallOf[]> {
    const fields = await this.redis.hgetall(this.leasesKey);
    const found: LeasedCallOf[] = [];
    for (const [worker, raw] of Object.entries(fields)) {
      if (worker === this.workerId) continue;
      const lease = leasedCallsOf(raw, messageId);
      if (lease) for (const call of lease.calls) found.push({ ...call, worker, leaseAt: lease.at });
    }
    return found;
  }

  /** Removes this worker's lease (it stops). */
  async leave(): Promise<void> {
    await this.redis.hdel(this.leasesKey, this.workerId);
  }
}
