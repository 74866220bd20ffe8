import type {
  CouncilResult,
  DebateResult,
  DeliberationAccepted,
  DeliberationRequest,
  DeliberationView,
  DeliveredEvent,
  DelphiResult,
  ErrorPayload,
  JuryResult,
  ModeName,
  VoteResult,
} from '@conclave/contracts';
import type { Socket } from 'socket.io-client';
import { ApiClient } from './api';
import { jsonObjectFlag, listFlag, modeFlag, type Flags, type Target } from './args';
import { CliError, UsageError } from './errors';
import { describeEvent } from './event-lines';
import { readText } from './files';
import { call, deferred, openLive } from './live';

export interface AskOptions {
  mode?: ModeName;
  models?: string[];
  chairman?: string;
  content?: string;
  originalQuestion?: string;
  config?: Record<string, unknown>;
}

/** Where each mode keeps its panel and its chairman-like role (council's are top-level fields). */
const ROSTER_FIELDS: Record<Exclude<ModeName, 'council'>, { models: string; chairman?: string }> = {
  vote: { models: 'models', chairman: 'chairmanModel' },
  debate: { models: 'models' },
  jury: { models: 'jurorModels', chairman: 'foremanModel' },
  delphi: { models: 'panelistModels', chairman: 'facilitatorModel' },
};

export function buildRequest(question: string, options: AskOptions): DeliberationRequest {
  const mode = options.mode ?? 'council';
  const request: DeliberationRequest = { question, ...(options.mode ? { mode } : {}) };
  const modeConfig: Record<string, unknown> = { ...options.config };
  if (mode !== 'jury' && (options.content !== undefined || options.originalQuestion !== undefined))
    throw new UsageError('--content, --content-file and --original-question are for --mode jury');
  if (mode === 'council') {
    if (options.models) request.councilModels = options.models;
    if (options.chairman) request.chairmanModel = options.chairman;
  } else {
    const fields = ROSTER_FIELDS[mode];
    if (options.chairman && !fields.chairman) throw new UsageError(`${mode} mode has no --chairman`);
    if (options.models) modeConfig[fields.models] = options.models;
    if (options.chairman && fields.chairman) modeConfig[fields.chairman] = options.chairman;
  }
  if (options.content !== undefined) modeConfig.content = options.content;
  if (options.originalQuestion !== undefined) modeConfig.originalQuestion = options.originalQuestion;
  if (Object.keys(modeConfig).length > 0) request.modeConfig = modeConfig;
  return request;
}

async function contentOf(flags: Flags): Promise<string | undefined> {
  if (flags.content !== undefined && flags['content-file'] !== undefined)
    throw new UsageError('give --content or --content-file, not both');
  const file = flags['content-file'];
  return file === undefined ? flags.content : readText(file);
}

async function optionsOf(flags: Flags): Promise<AskOptions> {
  return {
    mode: modeFlag(flags.mode),
    models: listFlag('models', flags.models),
    chairman: flags.chairman,
    content: await contentOf(flags),
    originalQuestion: flags['original-question'],
    config: jsonObjectFlag('config', flags.config),
  };
}

type AnyResult = Partial<CouncilResult & VoteResult & DebateResult & JuryResult & DelphiResult>;

/** The mode's primary answer: synthesis, winning answer, foreman's report or facilitator's report. */
export function primaryAnswer(view: DeliberationView<AnyResult | null>): string | null {
  const result = view.result ?? {};
  switch (view.mode) {
    case 'council':
      return result.stage3?.response ?? null;
    case 'vote':
    case 'debate':
      return result.winner?.winnerResponse ?? null;
    case 'jury':
      return result.foreman?.reportText ?? null;
    case 'delphi':
      return result.report?.report ?? null;
    default:
      return null;
  }
}

type Ending = { ok: true } | { ok: false; message: string };

/** Starts the deliberation, prints its progress, and resolves on `complete` or `error`. */
async function follow(target: Target, request: DeliberationRequest): Promise<DeliberationAccepted> {
  const ending = deferred<Ending>();
  let resubscribe = (): void => undefined;
  const socket: Socket = await openLive(target, {
    onReconnect: () => resubscribe(),
    onLost: ending.reject,
  });
  try {
    const accepted = await call<DeliberationAccepted>(socket, 'deliberate', request);
    process.stderr.write(`deliberation ${accepted.messageId} (conversation ${accepted.conversationId})\n`);
    let lastSeq = 0;
    socket.onAny((name: string, event: DeliveredEvent) => {
      if (event?.messageId !== accepted.messageId || event.seq <= lastSeq) return;
      lastSeq = event.seq;
      const line = describeEvent(event);
      if (line) process.stderr.write(`${line}\n`);
      if (name === 'complete') ending.resolve({ ok: true });
      if (name === 'error')
        ending.resolve({ ok: false, message: (event as unknown as ErrorPayload).message });
    });
    const subscribe = () =>
      call(socket, 'subscribe', { messageId: accepted.messageId, afterSeq: lastSeq }).catch(ending.reject);
    resubscribe = () => void subscribe();
    await subscribe();
    const end = await ending.promise;
    if (!end.ok) throw new CliError(end.message);
    return accepted;
  } finally {
    socket.close();
  }
}

export async function askCommand(target: Target, args: string[], flags: Flags): Promise<number> {
  const request = buildRequest(args.join(' '), await optionsOf(flags));
  const { messageId } = await follow(target, request);
  const view = await new ApiClient(target).json<DeliberationView<AnyResult | null>>(
    'GET',
    `/deliberations/${encodeURIComponent(messageId)}`,
  );
  if (flags.json) {
    process.stdout.write(`${JSON.stringify(view, null, 2)}\n`);
    return 0;
  }
  const answer = primaryAnswer(view);
  if (answer === null) throw new CliError(`deliberation ${messageId} completed without an answer`);
  process.stdout.write(`${answer}\n`);
  return 0;
}
