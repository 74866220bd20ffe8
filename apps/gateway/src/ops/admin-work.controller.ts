import { HttpCode, Param, Post } from '@nestjs/common';
import { ApiOkResponse, ApiOperation } from '@nestjs/swagger';
import {
  ADMIN_CANCEL_REASON,
  ApiKeysRepository,
  OpenWorkRepository,
  WorkStops,
  type CancelledWork,
} from '@conclave/persistence';
import { ApiKeyController } from '../auth/api-key-controller';
import { ApiAdminUserResponses } from '../auth/admin-routes';
import { CurrentUser } from '../auth/auth.guard';
import { ApiError } from '../common/api-error';
import { USER_NAME } from '../common/user-name';

/** What POST /api/admin/users/:name/cancel-work answers. */
export interface UserWorkCancelled extends CancelledWork {
  user: string;
}

/** Admin routes over a user's work (admin keys only; others get 403). */
@ApiKeyController('admin', 'admin/users')
export class AdminWorkController {
  constructor(
    private readonly apiKeys: ApiKeysRepository,
    private readonly openWork: OpenWorkRepository,
    private readonly stops: WorkStops,
  ) {}

  @Post(':name/cancel-work')
  @HttpCode(200)
  @ApiOperation({
    summary: "Admin: cancel everything a user has queued or running (every key's work, and work without one)",
    description:
      'Each of their deliberations and batches ends as a stop by the user would end it: status `cancelled`, ' +
      'last event `cancelled { reason: "Cancelled by an administrator." }`, calls in flight aborted in every ' +
      'worker, what was stored before kept as the partial result. The user and their keys stay valid. ' +
      'Answers how many deliberations (outside batches), batches and batch items were cancelled.',
  })
  @ApiOkResponse({ description: '{ user, deliberations, batches, batchItems }' })
  @ApiAdminUserResponses()
  async cancelWork(@CurrentUser() userId: string, @Param('name') name: string): Promise<UserWorkCancelled> {
    if (!(await this.apiKeys.isAdmin(userId)))
      throw new ApiError(403, "Cancelling a user's work is for admin keys only");
    const target = USER_NAME.test(name) ? await this.openWork.userIdByName(name) : null;
    if (!target) throw ApiError.notFound(`user ${name.slice(0, 100)}`);
    const cancelled = await this.stops.cancelWorkOf({ userId: target }, ADMIN_CANCEL_REASON);
    return { user: name, ...cancelled };
  }
}
