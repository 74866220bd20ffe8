import { createHash } from 'node:crypto';
import type { RedisClient } from '@conclave/redis';

/** What a `notifications/cancelled` that arrives before its call has started leaves behind. */
const TOMBSTONE = 'cancelled';
const TOMBSTONE_TTL_MS = 10 * 60_000;

export type Claim = 'claimed' | 'cancelled';

/**
 * Which deliberation each running MCP tool call started, so that the client's
 * `notifications/cancelled` can stop it from any gateway replica.
 *
 * /mcp is stateless (any replica answers any POST), and a client sends its cancellation in a POST
 * of its own, which may reach another replica than the call's: the SDK's own mechanism (the
 * handler's `extra.signal`) only works inside one Server instance. So each call is recorded in
 * Redis under its client's coordinates — the user, the `Mcp-Session-Id` the gateway handed out at
 * `initialize` (an opaque random token, nothing is kept per session) and the JSON-RPC request id —
 * and a cancellation looks the deliberation up there. One that arrives before its call recorded
 * anything leaves a tombstone, which the call finds when it records its deliberation.
 * Without a session id there is no safe way to tell two clients' request ids apart: such a client's
 * cancellation is ignored (its connection closing does not cancel either, as the protocol says).
 */
export class McpCancellations {
  constructor(
    private readonly redis: RedisClient,
    private readonly prefix: string,
    /** How long a call's record is kept at most (longer than any deliberation may run). */
    private readonly ttlMs: number,
  ) {}

  /** The record's key for a call, or null when the client has no session id. */
  keyOf(userId: string, sessionId: string | undefined, requestId: string | number): string | null {
    if (!sessionId) return null;
    const digest = createHash('sha256')
      .update(JSON.stringify([userId, sessionId, requestId]))
      .digest('hex');
    return `${this.prefix}:mcp:call:${digest}`;
  }

  /** Whether the call was cancelled before it started anything. */
  async cancelledEarly(key: string | null): Promise<boolean> {
    if (key === null) return false;
    return (await this.redis.get(key)) === TOMBSTONE;
  }

  /** Records the call's deliberation; `cancelled` when a cancellation got there first. */
  async claim(key: string | null, messageId: string): Promise<Claim> {
    if (key === null) return 'claimed';
    const set = await this.redis.set(key, messageId, 'PX', this.ttlMs, 'NX');
    if (set === 'OK') return 'claimed';
    return (await this.redis.get(key)) === TOMBSTONE ? 'cancelled' : 'claimed';
  }

  /** Forgets the call once it has ended: a late cancellation then finds nothing to stop. */
  async release(key: string | null): Promise<void> {
    if (key !== null) await this.redis.del(key);
  }

  /**
   * The client cancelled the call: the deliberation it started (resolved with its id), or null
   * when it has not started one yet (a tombstone then stops it from starting one that runs on).
   */
  async cancel(key: string | null): Promise<string | null> {
    if (key === null) return null;
    const set = await this.redis.set(key, TOMBSTONE, 'PX', TOMBSTONE_TTL_MS, 'NX');
    if (set === 'OK') return null;
    const value = await this.redis.get(key);
    return value && value !== TOMBSTONE ? value : null;
  }
}
