import { createParamDecorator, Injectable, type CanActivate, type ExecutionContext } from '@nestjs/common';
import type { Request } from 'express';
import { ApiError } from '../common/api-error';
import { RateLimiter } from '../common/rate-limiter';
import { AuthService, type Identity } from './auth.service';
import { StreamTickets } from './stream-tickets';

type AuthenticatedRequest = Request & { userId?: string; apiKeyId?: string | null };

/** The user and key (null in single-user mode) a request was authenticated with. */
export const identityOf = (request: Request): Identity | null => {
  const { userId, apiKeyId } = request as AuthenticatedRequest;
  return userId ? { userId, keyId: apiKeyId ?? null } : null;
};

/** The id of the API key a request was authenticated with (null in single-user mode). */
export const apiKeyIdOf = (request: Request): string | null =>
  (request as AuthenticatedRequest).apiKeyId ?? null;

@Injectable()
export class ApiKeyGuard implements CanActivate {
  constructor(
    private readonly auth: AuthService,
    private readonly limiter: RateLimiter,
    private readonly tickets: StreamTickets,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const request = context.switchToHttp().getRequest<AuthenticatedRequest>();
    const headerToken = AuthService.bearer(request.headers.authorization);
    // EventSource cannot send headers: the SSE stream takes a single-use ticket (?ticket=) instead.
    const ticket =
      headerToken === undefined &&
      request.method === 'GET' &&
      request.path.endsWith('/events') &&
      typeof request.query.ticket === 'string'
        ? request.query.ticket
        : undefined;
    const presented = headerToken ?? ticket;
    // A presented key costs a lookup: an address with too many wrong keys is refused before it.
    const address = presented === undefined ? null : this.limiter.clientAddress(request);
    if (address !== null) await this.limiter.assertAuthAllowed(address);
    const identity =
      ticket !== undefined
        ? await this.tickets.redeem(ticket, String(request.params.messageId ?? ''))
        : await this.auth.identify(headerToken);
    const userId = identity?.userId;
    if (!userId) {
      if (address !== null) await this.limiter.recordAuthFailure(address);
      throw new ApiError(
        401,
        ticket !== undefined
          ? 'Invalid stream ticket: unknown, expired, already used, for another deliberation, or its key was revoked; POST .../events/ticket for a new one'
          : 'Missing or invalid API key: send "Authorization: Bearer <key>"',
      );
    }
    request.userId = userId;
    request.apiKeyId = identity.keyId;
    await this.limiter.take(userId, 'requests');
    return true;
  }
}

export const CurrentUser = createParamDecorator((_: unknown, context: ExecutionContext): string => {
  const userId = context.switchToHttp().getRequest<AuthenticatedRequest>().userId;
  if (!userId) throw new ApiError(401, 'Not authenticated');
  return userId;
});
