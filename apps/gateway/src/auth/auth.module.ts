import { Module } from '@nestjs/common';
import { ApiKeyGuard } from './auth.guard';
import { AuthService } from './auth.service';
import { StreamTickets } from './stream-tickets';

/**
 * API keys and stream tickets. Every module whose controllers carry `@UseGuards(ApiKeyGuard)`
 * imports it: Nest builds the guard in the controller's module, from AuthService and StreamTickets
 * exported here and the RateLimiter of CoreModule.
 */
@Module({
  providers: [AuthService, StreamTickets, ApiKeyGuard],
  exports: [AuthService, StreamTickets, ApiKeyGuard],
})
export class AuthModule {}
