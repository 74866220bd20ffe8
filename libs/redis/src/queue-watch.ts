import { randomUUID } from 'node:crypto';
import type { RedisClient } from './connection';

/** What one worker last said it runs, and when (its clock, ms). */
interface Lease {
  at: number;
  running: string[];
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
 *   that within a heartbeat of Redis's return every live worker's field is back.
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
  async beat(running: Iterable<string>): Promise<{ lost: string | null }> {
    const lease: Lease = { at: Date.now(), running: [...running] };
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

  /** Removes this worker's lease (it stops). */
  async leave(): Promise<void> {
    await this.redis.hdel(this.leasesKey, this.workerId);
  }
}
