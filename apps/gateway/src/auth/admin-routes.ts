import { applyDecorators } from '@nestjs/common';
import { ApiForbiddenResponse, ApiNotFoundResponse } from '@nestjs/swagger';

/**
 * The OpenAPI answers of an admin route about a user named in its path (`admin/users/:name/…`):
 * 403 for a key that is not an admin's, 404 for no user of that name.
 */
export const ApiAdminUserResponses = (): MethodDecorator =>
  applyDecorators(
    ApiForbiddenResponse({ description: 'Not an admin key' }),
    ApiNotFoundResponse({ description: 'No user of that name' }),
  );
