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
import {
  createRedis,
  isCluster,
  type ConnectionErrorListener,
  type RedisClient,
  type RedisTarget,
} from './connection';
import { readJson } from './json';

/**
 * Publishes on a deliberation's live channel; answers how many subscribers heard it. On one Redis
 * a PUBLISH. On a cluster a sharded SPUBLISH, sent to the master of the channel's slot, where every
 * subscriber of the channel is (SSUBSCRIBE): a plain PUBLISH there would reach them too, through
 * the cluster bus, but would count only the subscribers of the node it was sent to.
 */
export async function publishLive(redis: RedisClient, channel: string, message: string): Promise<number> {
  if (!isCluster(redis)) return redis.publish(channel, message);
  // SPUBLISH answers an integer like PUBLISH (ioredis types it `unknown`).
  const heard = await redis.spublish(channel, message);
  return typeof heard === 'number' ? heard : 0;
}

/**
 * A worker's live pieces on Redis: one PUBLISH per deliberation per DELTA_INTERVAL_MS while a
 * gateway watches it, on the deliberation's own channel (only gateways with a watcher subscribe).
 */
export class RedisLiveChannel implements LiveChannel {
  constructor(
    private readonly redis: RedisClient,
    private readonly prefix: string,
  ) {}

  async sendDeltas(messageId: string, deltas: (ModelDeltaPayload & LiveCallId)[]): Promise<boolean> {
    const message: LiveChannelMessage = { kind: 'deltas', deltas };
    // PUBLISH answers how many subscribers heard it: none means nobody watches any more.
    return (await publishLive(this.redis, liveChannel(this.prefix, messageId), JSON.stringify(message))) > 0;
  }

  async sendPartials(
    messageId: string,
    replyTo: string,
    partials: (ModelPartialPayload & LiveCallId)[],
  ): Promise<void> {
    const message: LiveChannelMessage = { kind: 'partials', replyTo, partials };
    await publishLive(this.redis, liveChannel(this.prefix, messageId), JSON.stringify(message));
  }
}

/**
 * A gateway's subscriptions to live channels (one per watched deliberation), on a connection of
 * their own: SUBSCRIBE on one Redis, sharded SSUBSCRIBE on a cluster (see publishLive). Commands
 * keep their order per channel: an unsubscribe sent before a subscribe of the same channel is
 * applied first.
 */
export class LiveSubscriber {
  private readonly redis: RedisClient;
  private readonly sharded: boolean;

  constructor(target: RedisTarget, onError?: ConnectionErrorListener) {
    this.redis = createRedis(target, 'subscriber', onError, { sharded: true });
    this.sharded = isCluster(this.redis);
  }

  /** `listener` hears every message of every subscribed channel. */
  onMessage(listener: (channel: string, message: string) => void): void {
    this.redis.on(this.sharded ? 'smessage' : 'message', listener);
  }

  /** `listener` hears each time the connection is ready (again, after a reconnect). */
  onReady(listener: () => void): void {
    this.redis.on('ready', listener);
  }

  /** Subscribes to `channels` (again, after a reconnect: resolves once they are all in place). */
  async subscribe(...channels: string[]): Promise<void> {
    if (channels.length === 0) return;
    if (!this.sharded) {
      await this.redis.subscribe(...channels);
      return;
    }
    // One SSUBSCRIBE's channels must share a slot: one each, to each channel's master.
    await Promise.all(channels.map((channel) => this.redis.ssubscribe(channel)));
  }

  async unsubscribe(channel: string): Promise<void> {
    await (this.sharded ? this.redis.sunsubscribe(channel) : this.redis.unsubscribe(channel));
  }

  disconnect(): void {
    this.redis.disconnect();
  }
}

/** Tells every worker something about a deliberation (cancel it, someone watches it). */
export async function publishControl(
  redis: RedisClient,
  prefix: string,
  message: ControlMessage,
): Promise<void> {
  await redis.publish(controlChannel(prefix), JSON.stringify(message));
}

/** Reads a control message; null for anything else (the channel is only ours, but be strict). */
export function parseControl(raw: string): ControlMessage | null {
  const value = readJson(raw);
  if (typeof value !== 'object' || value === null) return null;
  const { type, messageId, replyTo } = value as Record<string, unknown>;
  if (typeof messageId !== 'string') return null;
  if (type === 'cancel') return { type, messageId };
  if (type === 'watch' && typeof replyTo === 'string') return { type, messageId, replyTo };
  return null;
}
