import { Module } from '@nestjs/common';
import { LiveHub } from './live-hub';
import { StreamRegistry } from './stream-registry';

/**
 * Where live text and open streams are kept: the live text's hub (LiveHub) and every open stream
 * (StreamRegistry, which closes a revoked key's). One of each per gateway, for REST's SSE,
 * Socket.IO, /v1 and MCP. The stored events' hub (EventHub, beside them in this folder) replays
 * through DeliberationsService, so DeliberationsModule provides it.
 */
@Module({
  providers: [LiveHub, StreamRegistry],
  exports: [LiveHub, StreamRegistry],
})
export class EventsModule {}
