import { loadConfig, migrationDatabaseUrl } from '@conclave/config';
import { migrate } from '@conclave/persistence';

async function main(): Promise<void> {
  const config = loadConfig();
  // DATABASE_DIRECT_URL when set: behind a transaction-pooling PgBouncer, PostgreSQL itself.
  const applied = await migrate(migrationDatabaseUrl(config));
  console.log(
    applied.length > 0 ? `applied migrations: ${applied.join(', ')}` : 'database schema is up to date',
  );
}

main().catch((error: unknown) => {
  console.error(`migration failed: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
});
