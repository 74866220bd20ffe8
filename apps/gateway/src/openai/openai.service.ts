import { Inject, Injectable, Logger } from '@nestjs/common';
import type { ConclaveConfig } from '@conclave/config';
import { MODE_NAMES, type ModeName } from '@conclave/contracts';
import { modeDefinition } from '@conclave/deliberation';
import { CONFIG } from '@conclave/platform';
import type { Request, Response } from 'express';
import { apiKeyIdOf } from '../auth/auth.guard';
import { CancelService } from '../deliberations/cancel.service';
import { DeliberationsService } from '../deliberations/deliberations.service';
import { EventHub } from '../events/event-hub';
import { LiveHub } from '../events/live-hub';
import { StreamRegistry } from '../events/stream-registry';
import { PresetsService } from '../presets/presets.service';
import { parseChatRequest, unknownModel, type ChatRequest } from './chat-request';
import { ChatRun } from './chat-run';
import { modelList } from './completions';
import { PublicUrl } from '../common/public-url';
import { fieldParam, planDeliberation } from './deliberation-plan';
import { OpenAiError } from './errors';
import { openAiErrorOf } from './openai-error.filter';
import { RetryGraceService } from './retry-grace.service';

/** The modes this version runs: each is a model `conclave/<mode>`. */
export const availableModes = (): ModeName[] =>
  MODE_NAMES.filter((mode) => modeDefinition(mode) !== undefined);

/**
 * The OpenAI-compatible surface: a chat request becomes a deliberation started exactly as
 * POST /api/deliberations starts one (DeliberationsService.start: validation, budget, rate limits,
 * idempotency), and its answer the mode's final text.
 */
@Injectable()
export class OpenAiService {
  private readonly logger = new Logger('openai');

  constructor(
    @Inject(CONFIG) private readonly config: ConclaveConfig,
    private readonly deliberations: DeliberationsService,
    private readonly cancels: CancelService,
    private readonly hub: EventHub,
    private readonly live: LiveHub,
    private readonly streams: StreamRegistry,
    private readonly presets: PresetsService,
    private readonly retryGrace: RetryGraceService,
    private readonly publicUrl: PublicUrl,
  ) {}

  async models(userId: string) {
    return modelList(availableModes(), await this.presets.list(userId));
  }

  async chat(
    userId: string,
    body: unknown,
    idempotencyKey: string | undefined,
    request: Request,
    response: Response,
  ): Promise<void> {
    const parsed = parseChatRequest(body);
    if (!parsed.ok) throw new OpenAiError(parsed.error);
    const chat = parsed.value;
    const { mode, preset } = await this.modeOf(userId, chat);
    const definition = modeDefinition(mode);
    if (!definition) throw new OpenAiError(unknownModel(chat.model));
    const plan = planDeliberation(chat, mode, definition.multiTurn);

    // A request in progress holds one of the user's SSE places (MAX_SSE_STREAMS_PER_USER): taken
    // before the deliberation starts, so a refusal starts nothing.
    let run: ChatRun | null = null;
    const stream = this.streams.open('sse', userId, apiKeyIdOf(request), (reason) => run?.close(reason));
    let messageId: string;
    try {
      ({ messageId } = await this.deliberations.start(userId, plan.body, idempotencyKey, {
        history: plan.history,
        apiKeyId: apiKeyIdOf(request),
      }));
    } catch (error) {
      stream.release();
      // Its errors in OpenAI's shape, the fields it names turned into the parameters they came from.
      const spec = openAiErrorOf(error, fieldParam(chat));
      if (!spec) throw error;
      throw new OpenAiError(spec);
    }
    run = new ChatRun(
      {
        deliberations: this.deliberations,
        cancels: this.cancels,
        hub: this.hub,
        live: this.live,
        config: this.config,
        logger: this.logger,
      },
      {
        userId,
        messageId,
        mode,
        model: chat.model,
        preset,
        // PUBLIC_URL (or the listening address), never the request's Host header.
        base: this.publicUrl.base(),
        earlierTurns: plan.earlierTurns,
        includeUsage: chat.includeUsage,
        stream,
        // The same key and request (a retry) got the same messageId: it follows the run from its start.
        retry: idempotencyKey === undefined ? null : this.retryGrace.attach({ userId, messageId }),
      },
      response,
    );
    if (chat.stream) run.stream();
    else run.answerWhenDone();
  }

  /** The mode a model id runs: its own, or its preset's (400 `model_not_found` for no such preset). */
  private async modeOf(
    userId: string,
    chat: ChatRequest,
  ): Promise<{ mode: ModeName; preset: string | null }> {
    if (chat.choice.kind === 'mode') return { mode: chat.choice.mode, preset: null };
    const preset = await this.presets.find(userId, chat.choice.name);
    if (!preset) throw new OpenAiError(unknownModel(chat.model));
    return { mode: preset.mode, preset: preset.name };
  }
}
