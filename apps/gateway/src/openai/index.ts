export { OpenAiController } from './openai.controller';
export { OpenAiModule } from './openai.module';
export { OpenAiService } from './openai.service';
