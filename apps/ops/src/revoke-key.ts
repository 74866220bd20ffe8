import { loadConfig } from '@conclave/config';
import { ApiKeysRepository, KEY_REVOKED_REASON } from '@conclave/persistence';
import { flagValue } from './args';
import { withDatabase } from './database';
import { announceRevokedKeys } from '@conclave/redis';
import { cliWorkStops, describeCancelled, printWarnings } from './work-stops';

const USAGE =
  'usage: npm run user:revoke-key -- --prefix <first 8 characters, e.g. ck_AbCdE> | --key <key> | --user <name>';

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const prefix = flagValue(args, '--prefix');
  const key = flagValue(args, '--key');
  const user = flagValue(args, '--user');
  const target = prefix ? { prefix } : key ? { key } : user ? { user } : null;
  if (!target) {
    console.error(USAGE);
    process.exit(2);
  }
  const config = loadConfig();
  await withDatabase(config.databaseUrl, 2, async (dataSource) => {
    // Redis is reached (or given up on) first, so that the keys' work is cancelled the moment they
    // are revoked: their queued and running deliberations and batches (stored first; with Redis,
    // every worker also aborts the calls it runs for them); then every gateway closes the keys'
    // open sockets and streams.
    const work = await cliWorkStops(config, dataSource);
    try {
      const revoked = await new ApiKeysRepository(dataSource).revoke(target);
      console.log(revoked.length === 0 ? 'no active key matched' : `revoked ${revoked.length} key(s)`);
      if (revoked.length === 0) {
        process.exitCode = 1;
        return;
      }
      try {
        const cancelled = await work.stops.cancelWorkOf({ keyIds: revoked }, KEY_REVOKED_REASON);
        console.log(`cancelled ${describeCancelled(cancelled)}`);
      } catch (error) {
        // The keys stay revoked; the workers' reconciler cancels what is left of their work.
        process.exitCode = 1;
        console.error(
          `could not cancel all of the keys' work (${error instanceof Error ? error.message : String(error)}); ` +
            "the workers' reconciler cancels what is left within RECONCILE_INTERVAL_MS (30 s by default)",
        );
      }
      if (work.redis) {
        await announceRevokedKeys(work.redis, config.redisPrefix, revoked).catch((error: unknown) =>
          work.warnings.push(`could not tell the gateways: ${String(error)}`),
        );
      }
      printWarnings(
        work,
        "; open sockets and streams of the key close within the gateways' STREAM_KEY_RECHECK_MS (5 s by default)",
      );
    } finally {
      await work.close();
    }
  });
}

main().catch((error: unknown) => {
  console.error(`could not revoke: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
});
