import { BullModule } from '@nestjs/bullmq';
import { Module } from '@nestjs/common';
import { LIFECYCLE_QUEUE } from '@conclave/contracts';
import { AuthModule } from '../auth/auth.module';
import { LifecycleQueueView } from './admin';
import { AdminWorkController } from './admin-work.controller';

/**
 * Operators: an admin's cancel of a user's work (POST /api/admin/users/:name/cancel-work), and the
 * data-lifecycle queue for the dashboard that `mountAdmin` (admin.ts) serves at /admin/queues.
 */
@Module({
  imports: [
    AuthModule,
    // The stage queue has checked Redis's version on this connection; checking again here would
    // send INFO while a Cluster may still be connecting, and without an offline queue that failure
    // would leave this Queue broken (every dashboard request a 500) for good.
    BullModule.registerQueue({ name: LIFECYCLE_QUEUE, skipVersionCheck: true }),
  ],
  controllers: [AdminWorkController],
  providers: [LifecycleQueueView],
})
export class OpsModule {}
