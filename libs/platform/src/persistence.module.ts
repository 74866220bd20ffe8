import { Logger, Module, type DynamicModule, type Provider } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import type { ConclaveConfig } from '@conclave/config';
import { dataSourceOptions, REPOSITORIES, TypeOrmDeliberationStore } from '@conclave/persistence';
import { DataSource } from 'typeorm';

/**
 * PostgreSQL through TypeORM: the DataSource and the classes that own every statement (the stage
 * store and the repositories), provided by Nest to whichever app imports it.
 */
@Module({})
export class PersistenceModule {
  /** `poolSize`: the most connections the pool opens (the worker's WORKER_DB_POOL). */
  static forRoot(config: ConclaveConfig, options: { poolSize?: number } = {}): DynamicModule {
    const log = new Logger('persistence');
    return {
      module: PersistenceModule,
      global: true,
      imports: [
        TypeOrmModule.forRoot({
          ...dataSourceOptions(config.databaseUrl, options.poolSize, config.databaseConnectTimeoutMs),
          retryAttempts: 3,
          retryDelay: 1000,
        }),
      ],
      providers: [
        {
          provide: TypeOrmDeliberationStore,
          inject: [DataSource],
          // Behind a transaction-pooling PgBouncer: no named prepared statements (DATABASE_POOL_MODE).
          useFactory: (dataSource: DataSource) =>
            new TypeOrmDeliberationStore(dataSource, {
              preparedStatements: config.database.poolMode !== 'transaction',
              warn: (message) => log.warn(message),
            }),
        },
        ...REPOSITORIES.map((statements): Provider => ({
          provide: statements,
          inject: [DataSource],
          useFactory: (dataSource: DataSource) => new statements(dataSource),
        })),
      ],
      exports: [TypeOrmDeliberationStore, ...REPOSITORIES],
    };
  }
}
