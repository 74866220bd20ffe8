import { Inject, Injectable, Logger, type OnModuleDestroy } from '@nestjs/common';
import type { ConclaveConfig } from '@conclave/config';
import { modelsInDefaults, type ModelsResponse } from '@conclave/contracts';
import { ModelDirectory } from '@conclave/llm';
import { CONFIG } from '@conclave/platform';

/**
 * The model list GET /api/models serves, one per gateway: the simulated panel, plus OpenRouter's
 * catalogue or the OpenAI-compatible server's list, cached in memory (ModelDirectory).
 */
@Injectable()
export class ModelsService implements OnModuleDestroy {
  private readonly logger = new Logger('models');
  private readonly directory: ModelDirectory;

  constructor(@Inject(CONFIG) config: ConclaveConfig) {
    this.directory = new ModelDirectory(config.modelCatalogue, {
      simulatedIds: modelsInDefaults(config.defaults).filter((id) => id.startsWith('sim/')),
      // The message names the source and the failure, hosts at most: never a credential.
      onError: (source, error) =>
        this.logger.warn(`could not fetch the ${source} model list: ${error.message}`),
    });
  }

  list(): Promise<ModelsResponse> {
    return this.directory.list();
  }

  onModuleDestroy(): void {
    this.directory.close();
  }
}
