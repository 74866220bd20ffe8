import { Module, type DynamicModule } from '@nestjs/common';
import type { ConclaveConfig } from '@conclave/config';
import { CONFIG } from './tokens';

/** The resolved configuration (loadConfig, checked at start-up) under the CONFIG token, everywhere. */
@Module({})
export class ConfigModule {
  static forRoot(config: ConclaveConfig): DynamicModule {
    return {
      module: ConfigModule,
      global: true,
      providers: [{ provide: CONFIG, useValue: config }],
      exports: [CONFIG],
    };
  }
}
