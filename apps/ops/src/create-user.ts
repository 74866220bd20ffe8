import { loadConfig } from '@conclave/config';
import { ApiKeysRepository } from '@conclave/persistence';
import { withDatabase } from './database';

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const nameIndex = args.indexOf('--name');
  const name = nameIndex >= 0 ? args[nameIndex + 1] : args.find((a) => !a.startsWith('--'));
  const role = args.includes('--admin') ? 'admin' : 'user';
  if (!name || !/^[\w.@-]{1,100}$/.test(name)) {
    console.error(
      'usage: npm run user:create -- --name <name> [--admin]   (letters, digits, . _ @ -; at most 100)',
    );
    process.exit(2);
  }
  await withDatabase(loadConfig().databaseUrl, 1, async (dataSource) => {
    const { userId, apiKey } = await new ApiKeysRepository(dataSource).createUserWithKey(name, role);
    console.log(`user ${name} (${userId})${role === 'admin' ? ', admin' : ''}`);
    console.log(`api key (shown once, store it now): ${apiKey}`);
  });
}

main().catch((error: unknown) => {
  console.error(`could not create the user: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
});
