import { ApiError } from '../common/api-error';

/**
 * `?dryRun=`: `true` or `1` asks for a dry run; absent, `false` or `0` does not; anything else
 * (a repeated parameter too) is a 400 naming `dryRun`.
 */
export function dryRunAsked(value: unknown): boolean {
  if (value === undefined || value === 'false' || value === '0') return false;
  if (value === 'true' || value === '1') return true;
  throw ApiError.invalid({ dryRun: 'dryRun must be true or false (or 1, 0)' });
}
