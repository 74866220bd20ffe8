import { createDataSource } from '@conclave/persistence';
import type { DataSource } from 'typeorm';

/**
 * Runs a command's work with a PostgreSQL DataSource of `poolSize` connections, opened first and
 * destroyed once the work has ended, returned or thrown.
 */
export async function withDatabase<T>(
  databaseUrl: string,
  poolSize: number,
  work: (dataSource: DataSource) => Promise<T>,
): Promise<T> {
  const dataSource = createDataSource(databaseUrl, poolSize);
  await dataSource.initialize();
  try {
    return await work(dataSource);
  } finally {
    await dataSource.destroy();
  }
}
