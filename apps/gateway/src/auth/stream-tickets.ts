import { createHash, randomBytes } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import type { ConclaveConfig } from '@conclave/config';
import { ApiKeysRepository } from '@conclave/persistence';
import { CONFIG, REDIS_PRODUCER } from '@conclave/platform';
import type { RedisClient } from '@conclave/redis';
import type { Identity } from './auth.service';

/** How long a stream ticket may wait for its first (and only) use. */
export const STREAM_TICKET_TTL_SECONDS = 60;
/** Tickets start with this, so that one is never mistaken for an API key (`ck_`). */
export const STREAM_TICKET_PREFIX = 'cst_';

export const hashStreamTicket = (ticket: string): string => createHash('sha256').update(ticket).digest('hex');

/** Where a ticket's binding lives in Redis: only the hash of the ticket is in the key. */
export const streamTicketKey = (redisPrefix: string, ticketHash: string): string =>
  `${redisPrefix}:sse-ticket:${ticketHash}`;

interface TicketBinding {
  userId: string;
  keyId: string | null;
  messageId: string;
}

/**
 * Short-lived, single-use tickets for the SSE stream, which EventSource opens without headers:
 * an API key never travels in a URL. A ticket is bound to its user, the key that asked for it and
 * one deliberation; it is consumed by its first use and refused once its key is revoked.
 */
@Injectable()
export class StreamTickets {
  constructor(
    @Inject(CONFIG) private readonly config: ConclaveConfig,
    @Inject(REDIS_PRODUCER) private readonly redis: RedisClient,
    private readonly apiKeys: ApiKeysRepository,
  ) {}

  async issue(identity: Identity, messageId: string): Promise<{ ticket: string; expiresInSeconds: number }> {
    const ticket = STREAM_TICKET_PREFIX + randomBytes(32).toString('base64url');
    const binding: TicketBinding = { userId: identity.userId, keyId: identity.keyId, messageId };
    await this.redis.set(
      streamTicketKey(this.config.redisPrefix, hashStreamTicket(ticket)),
      JSON.stringify(binding),
      'EX',
      STREAM_TICKET_TTL_SECONDS,
    );
    return { ticket, expiresInSeconds: STREAM_TICKET_TTL_SECONDS };
  }

  /** The identity a ticket stands for on this deliberation's stream (consuming it), or null. */
  async redeem(ticket: string, messageId: string): Promise<Identity | null> {
    if (!ticket.startsWith(STREAM_TICKET_PREFIX) || ticket.length > 200) return null;
    const raw = await this.redis.getdel(streamTicketKey(this.config.redisPrefix, hashStreamTicket(ticket)));
    if (raw === null) return null;
    const binding = JSON.parse(raw) as TicketBinding;
    if (binding.messageId !== messageId) return null;
    if (binding.keyId !== null && !(await this.apiKeys.activeIds([binding.keyId])).has(binding.keyId))
      return null;
    return { userId: binding.userId, keyId: binding.keyId };
  }
}
