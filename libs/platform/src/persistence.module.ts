import { Module, type DynamicModule } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import type { ConclaveConfig } from '@conclave/config';
import { dataSourceOptions, TypeOrmDeliberationStore } from '@conclave/persistence';
import { DataSource } from 'typeorm';

/**
 * PostgreSQL through TypeORM: the DataSource and the classes that own every statement (the stage
 * store and the repositories), provided by Nest to whichever app imports it.
 */
@Module({})
export class PersistenceModule {
  static forRoot(config: ConclaveConfig): DynamicModule {
    return {
      module: PersistenceModule,
      global: true,
      imports: [
        TypeOrmModule.forRoot({
          ...dataSourceOptions(config.databaseUrl),
          retryAttempts: 3,
          retryDelay: 1000,
        }),
      ],
      providers: [
        {
          provide: TypeOrmDeliberationStore,
          inject: [DataSource],
          useFactory: (dataSource: DataSource) => new TypeOrmDeliberationStore(dataSource),
        },
      ],
      exports: [TypeOrmDeliberationStore],
    };
  }
}
