import { Get } from '@nestjs/common';
import { ApiOkResponse, ApiOperation } from '@nestjs/swagger';
import type { ModelsResponse } from '@conclave/contracts';
import { ApiKeyController } from '../auth/api-key-controller';
import { ModelsService } from './models.service';

@ApiKeyController('models')
export class ModelsController {
  constructor(private readonly models: ModelsService) {}

  @Get()
  @ApiOperation({
    summary: 'The model ids a roster can name, from every configured source',
    description:
      'The simulated panel (always), the OpenRouter catalogue with context lengths and prices per million ' +
      "tokens (when OPENROUTER_API_KEY is set), or the OpenAI-compatible server's own list (when " +
      'OPENAI_BASE_URL is set and no OpenRouter key is), each cached and fetched again after ' +
      'MODEL_CATALOGUE_REFRESH_MS. `sources` says per source whether it is configured, when its list was ' +
      'last fetched and why the last fetch failed (the last good list is still served); `directives` ' +
      'documents what may follow `sim/<name>`. Any other id in the form provider/name is still accepted.',
  })
  @ApiOkResponse({ description: '`{ models, sources, directives, promptKinds }`' })
  list(): Promise<ModelsResponse> {
    return this.models.list();
  }
}
