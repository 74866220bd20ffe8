import { loadConfig } from '@conclave/config';
import { migrate } from '../data-source';

async function main(): Promise<void> {
  const config = loadConfig();
  const applied = await migrate(config.databaseUrl);
  console.log(
    applied.length > 0 ? `applied migrations: ${applied.join(', ')}` : 'database schema is up to date',
  );
}

main().catch((error: unknown) => {
  console.error(`migration failed: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
});
