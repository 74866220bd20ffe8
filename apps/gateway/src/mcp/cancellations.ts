import { createHash } from 'node:crypto';
import type { RedisClient } from '@conclave/redis';

/** Longer than any call waits (MAX_WAIT_SECONDS, plus starting its deliberation). */
const RECORD_TTL_MS = 15 * 60_000;

/**
 * The tool calls a client has cancelled (`notifications/cancelled`), so that the call's wait ends
 * on whichever gateway replica runs it. A cancellation ends that call only: the deliberation it
 * started or waits for goes on (only cancel_deliberation, or a stop from the API or the web
 * client, stops a deliberation), and get_deliberation picks it up.
 *
 * /mcp is stateless (any replica answers any POST), and a client sends its cancellation in a POST
 * of its own, which may reach another replica than the call's: the SDK's own mechanism (the
 * handler's `extra.signal`) only works inside one Server instance. So a cancellation is recorded
 * in Redis under its client's coordinates — the user, the `Mcp-Session-Id` the gateway handed out
 * at `initialize` (signed for the user's key and checked on every request, nothing is kept per
 * session: sessions.ts) and the JSON-RPC request id — and a waiting call looks there. Without a session id there is no safe way to tell two
 * clients' request ids apart: such a client's cancellation is ignored, and its call waits out its
 * `waitSeconds` (or its connection).
 */
export class McpCancellations {
  constructor(
    private readonly redis: RedisClient,
    private readonly prefix: string,
  ) {}

  /** The record's key for a call, or null when the client has no session id. */
  keyOf(userId: string, sessionId: string | undefined, requestId: string | number): string | null {
    if (!sessionId) return null;
    const digest = createHash('sha256')
      .update(JSON.stringify([userId, sessionId, requestId]))
      .digest('hex');
    return `${this.prefix}:mcp:cancelled:${digest}`;
  }

  /** The client cancelled the call (it may not have reached any replica yet). */
  async cancel(key: string | null): Promise<void> {
    if (key !== null) await this.redis.set(key, '1', 'PX', RECORD_TTL_MS);
  }

  /** Whether the client has cancelled the call. */
  async cancelled(key: string | null): Promise<boolean> {
    if (key === null) return false;
    return (await this.redis.get(key)) !== null;
  }
}
