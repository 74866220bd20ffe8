import { Module, type DynamicModule } from '@nestjs/common';
import { modelsNamedInConfig, type ConclaveConfig } from '@conclave/config';
import { Metrics, createLogger, type Logger } from '@conclave/observability';
import { LOGGER, METRICS } from './tokens';

export interface ObservabilityOptions {
  /** Replaces the JSON logger on stdout (tests pass a silent one). */
  logger?: Logger;
}

/**
 * The process's Prometheus metrics (METRICS) and its JSON logger (LOGGER), everywhere. Only the
 * models the configuration names get a `model` label of their own: request input stays out.
 */
@Module({})
export class ObservabilityModule {
  static forRoot(
    config: ConclaveConfig,
    role: 'gateway' | 'worker',
    options: ObservabilityOptions = {},
  ): DynamicModule {
    return {
      module: ObservabilityModule,
      global: true,
      providers: [
        {
          provide: LOGGER,
          useFactory: () => options.logger ?? createLogger(config.logLevel, role),
        },
        {
          provide: METRICS,
          useFactory: () => new Metrics(role, { models: modelsNamedInConfig(config) }),
        },
      ],
      exports: [LOGGER, METRICS],
    };
  }
}
