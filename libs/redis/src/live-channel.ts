import {
  controlChannel,
  liveChannel,
  type ControlMessage,
  type LiveCallId,
  type LiveChannelMessage,
  type ModelDeltaPayload,
  type ModelPartialPayload,
} from '@conclave/contracts';
import type { LiveChannel } from '@conclave/deliberation';
import type { Redis } from 'ioredis';

/**
 * A worker's live pieces on Redis: one PUBLISH per deliberation per DELTA_INTERVAL_MS while a
 * gateway watches it, on the deliberation's own channel (only gateways with a watcher subscribe).
 */
export class RedisLiveChannel implements LiveChannel {
  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
  ) {}

  async sendDeltas(messageId: string, deltas: (ModelDeltaPayload & LiveCallId)[]): Promise<boolean> {
    const message: LiveChannelMessage = { kind: 'deltas', deltas };
    // PUBLISH answers how many subscribers heard it: none means nobody watches any more.
    return (await this.redis.publish(liveChannel(this.prefix, messageId), JSON.stringify(message))) > 0;
  }

  async sendPartials(
    messageId: string,
    replyTo: string,
    partials: (ModelPartialPayload & LiveCallId)[],
  ): Promise<void> {
    const message: LiveChannelMessage = { kind: 'partials', replyTo, partials };
    await this.redis.publish(liveChannel(this.prefix, messageId), JSON.stringify(message));
  }
}

/** Tells every worker something about a deliberation (cancel it, someone watches it). */
export async function publishControl(redis: Redis, prefix: string, message: ControlMessage): Promise<void> {
  await redis.publish(controlChannel(prefix), JSON.stringify(message));
}

/** Reads a control message; null for anything else (the channel is only ours, but be strict). */
export function parseControl(raw: string): ControlMessage | null {
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch {
    return null;
  }
  if (typeof value !== 'object' || value === null) return null;
  const { type, messageId, replyTo } = value as Record<string, unknown>;
  if (typeof messageId !== 'string') return null;
  if (type === 'cancel') return { type, messageId };
  if (type === 'watch' && typeof replyTo === 'string') return { type, messageId, replyTo };
  return null;
}
