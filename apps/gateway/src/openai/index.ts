import { OpenAiController } from './openai.controller';
import { OpenAiService } from './openai.service';
import { RetryGraceService } from './retry-grace.service';

/**
 * The OpenAI-compatible surface (/v1). Declared by AppModule, as ModelsController and
 * PresetsController are: it uses AppModule's own providers (ApiKeyGuard, DeliberationsService,
 * EventHub, LiveHub, StreamRegistry, CancelService).
 */
export const OPENAI_CONTROLLERS = [OpenAiController];
export const OPENAI_PROVIDERS = [OpenAiService, RetryGraceService];

export { OpenAiController, OpenAiService };
