import { loadConfig } from '@conclave/config';
import { revokeApiKeys } from '../api-keys';
import { createDataSource } from '../data-source';

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
  const dataSource = createDataSource(loadConfig().databaseUrl, 1);
  await dataSource.initialize();
  try {
    const revoked = await revokeApiKeys(dataSource, target);
    console.log(revoked === 0 ? 'no active key matched' : `revoked ${revoked} key(s)`);
    if (revoked === 0) process.exitCode = 1;
  } finally {
    await dataSource.destroy();
  }
}

main().catch((error: unknown) => {
  console.error(`could not revoke: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
});
