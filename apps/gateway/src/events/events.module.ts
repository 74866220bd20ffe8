import { Module } from '@nestjs/common';
import { EventHub } from './event-hub';
import { LiveHub } from './live-hub';
import { StreamRegistry } from './stream-registry';

/**
 * Where events reach clients from: the stored events' hub (EventHub: Redis subscription, replay
 * from PostgreSQL), the live text's hub (LiveHub) and every open stream (StreamRegistry). One of
 * each per gateway, for REST's SSE, Socket.IO, /v1 and MCP.
 */
@Module({
  providers: [EventHub, LiveHub, StreamRegistry],
  exports: [EventHub, LiveHub, StreamRegistry],
})
export class EventsModule {}
