/**
 * Set-up of the db and e2e tiers (jest.config.js): they use the live PostgreSQL and Redis, so the
 * unit tiers' connection guard (test/support/no-services.ts), if this worker process installed
 * it for an earlier file, lets connections through.
 */
import { noServicesGuard } from './services-guard';

const guard = noServicesGuard();
guard.on = false;
guard.violations = [];
