import { loadConfig } from '@conclave/config';
import { announceRevokedKeys } from '../api-keys';
import { createDataSource } from '../data-source';
import { ApiKeysRepository } from '../repositories/api-keys.repository';

const USAGE =
  'usage: npm run user:revoke-key -- --prefix <first 8 characters, e.g. ck_AbCdE> | --key <key> | --user <name>';

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const value = (flag: string) => {
    const i = args.indexOf(flag);
    return i >= 0 ? args[i + 1] : undefined;
  };
  const prefix = value('--prefix');
  const key = value('--key');
  const user = value('--user');
  const target = prefix ? { prefix } : key ? { key } : user ? { user } : null;
  if (!target) {
    console.error(USAGE);
    process.exit(2);
  }
  const config = loadConfig();
  const dataSource = createDataSource(config.databaseUrl, 1);
  await dataSource.initialize();
  let revoked: string[];
  try {
    revoked = await new ApiKeysRepository(dataSource).revoke(target);
  } finally {
    await dataSource.destroy();
  }
  console.log(revoked.length === 0 ? 'no active key matched' : `revoked ${revoked.length} key(s)`);
  if (revoked.length === 0) {
    process.exitCode = 1;
    return;
  }
  // The revocation stands in PostgreSQL; this tells every gateway to close the keys' open sockets and
  // SSE streams now. Without Redis they find it themselves within STREAM_KEY_RECHECK_MS.
  try {
    await announceRevokedKeys(config, config.redisPrefix, revoked);
  } catch (error) {
    console.error(
      `warning: could not tell the gateways through Redis (${error instanceof Error ? error.message : String(error)}); ` +
        "open sockets and streams of the key close within the gateways' STREAM_KEY_RECHECK_MS (5 s by default)",
    );
  }
}

main().catch((error: unknown) => {
  console.error(`could not revoke: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
});
