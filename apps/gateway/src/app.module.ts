import { Module, type DynamicModule } from '@nestjs/common';
import type { ConclaveConfig } from '@conclave/config';
import { BatchesModule } from './batches/batches.module';
import { BudgetsModule } from './budgets/budgets.module';
import { CoreModule } from './core/core.module';
import { DeliberationsModule } from './deliberations/deliberations.module';
import { SocketModule } from './events/socket.module';
import { HealthModule } from './health/health.module';
import { McpModule } from './mcp';
import { ModelsModule } from './models';
import { ModesModule } from './modes/modes.module';
import { OpenAiModule } from './openai';
import { OpsModule } from './ops/ops.module';
import { PresetsModule } from './presets';

/**
 * The gateway: its infrastructure (CoreModule, global) and one module per feature, each declaring
 * its controllers and providers and importing the modules whose services it uses.
 */
@Module({})
export class AppModule {
  static register(config: ConclaveConfig): DynamicModule {
    return {
      module: AppModule,
      imports: [
        CoreModule.register(config),
        DeliberationsModule,
        BatchesModule,
        BudgetsModule,
        OpsModule,
        ModesModule,
        ModelsModule,
        PresetsModule,
        HealthModule,
        McpModule,
        OpenAiModule,
        SocketModule,
      ],
    };
  }
}
