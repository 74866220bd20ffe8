import { createParamDecorator, Injectable, type CanActivate, type ExecutionContext } from '@nestjs/common';
import type { Request } from 'express';
import { ApiError } from '../common/api-error';
import { RateLimiter } from '../common/rate-limiter';
import { AuthService } from './auth.service';

type AuthenticatedRequest = Request & { userId?: string };

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
    const userId = await this.auth.userFor(AuthService.bearer(request.headers.authorization) ?? queryToken);
    if (!userId) {
      throw new ApiError(401, 'Missing or invalid API key: send "Authorization: Bearer <key>"');
    }
    request.userId = userId;
    await this.limiter.take(userId, 'requests');
    return true;
  }
}

export const CurrentUser = createParamDecorator((_: unknown, context: ExecutionContext): string => {
  const userId = context.switchToHttp().getRequest<AuthenticatedRequest>().userId;
  if (!userId) throw new ApiError(401, 'Not authenticated');
  return userId;
});
