import { Module } from '@nestjs/common';
import { AuthModule } from '../auth/auth.module';
import { BatchesModule } from '../batches/batches.module';
import { DeliberationsModule } from '../deliberations/deliberations.module';
import { DeliberationsGateway } from './deliberations.gateway';
import { EventsModule } from './events.module';

/** The Socket.IO namespace /deliberations: deliberate, subscribe, cancel, unsubscribe; batch progress. */
@Module({
  imports: [AuthModule, EventsModule, DeliberationsModule, BatchesModule],
  providers: [DeliberationsGateway],
})
export class SocketModule {}
