import { loadConfig } from '@conclave/config';
import { ADMIN_CANCEL_REASON, OpenWorkRepository } from '@conclave/persistence';
import { flagValue } from './args';
import { withDatabase } from './database';
import { cliWorkStops, describeCancelled, printWarnings } from './work-stops';

const USAGE = 'usage: npm run user:cancel-work -- --user <name>';

/**
 * Cancels everything a user has queued or running (every key's work, and work started without
 * one), as POST /api/admin/users/:name/cancel-work does; the user and their keys stay as they are.
 */
async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const user = flagValue(args, '--user');
  if (!user) {
    console.error(USAGE);
    process.exit(2);
  }
  const config = loadConfig();
  await withDatabase(config.databaseUrl, 2, async (dataSource) => {
    const userId = await new OpenWorkRepository(dataSource).userIdByName(user);
    if (!userId) {
      console.error(`no user named ${user}`);
      process.exitCode = 1;
      return;
    }
    const work = await cliWorkStops(config, dataSource);
    try {
      const cancelled = await work.stops.cancelWorkOf({ userId }, ADMIN_CANCEL_REASON);
      console.log(`user ${user}: cancelled ${describeCancelled(cancelled)}`);
      printWarnings(work);
    } finally {
      await work.close();
    }
  });
}

main().catch((error: unknown) => {
  console.error(`could not cancel the work: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
});
