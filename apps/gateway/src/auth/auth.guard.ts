import { createParamDecorator, Injectable, type CanActivate, type ExecutionContext } from '@nestjs/common';
import type { Request } from 'express';
import { ApiError } from '../common/api-error';
import { RateLimiter } from '../common/rate-limiter';
import { AuthService } from './auth.service';

type AuthenticatedRequest = Request & { userId?: string; apiKeyId?: string | null };

/** The id of the API key a request was authenticated with (null in single-user mode). */
export const apiKeyIdOf = (request: Request): string | null =>
  (request as AuthenticatedRequest).apiKeyId ?? null;

@Injectable()
export class ApiKeyGuard implements CanActivate {
  constructor(
    private readonly auth: AuthService,
    private readonly limiter: RateLimiter,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const request = context.switchToHttp().getRequest<AuthenticatedRequest>();
    // EventSource cannot send headers, so the SSE stream also takes the key as ?access_token=.
    const queryToken =
      request.method === 'GET' &&
      request.path.endsWith('/events') &&
      typeof request.query.access_token === 'string'
        ? request.query.access_token
        : undefined;
    const token = AuthService.bearer(request.headers.authorization) ?? queryToken;
    // A presented key costs a lookup: an address with too many wrong keys is refused before it.
    const address = token === undefined ? null : this.limiter.clientAddress(request);
    if (address !== null) await this.limiter.assertAuthAllowed(address);
    const identity = await this.auth.identify(token);
    const userId = identity?.userId;
    if (!userId) {
      if (address !== null) await this.limiter.recordAuthFailure(address);
      throw new ApiError(401, 'Missing or invalid API key: send "Authorization: Bearer <key>"');
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
