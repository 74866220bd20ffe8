import type {
  CancelledPayload,
  DeliberationAccepted,
  DeliberationRequest,
  DeliberationView,
  DeliveredEvent,
  ErrorPayload,
  LiveEvent,
  ModeName,
} from '@conclave/contracts';
import { MODE_FACTS } from '@conclave/deliberation/facts';
import { finalTextOf, type AnyResult } from '@conclave/outcomes';
import { AnswerPrinter, printable, type AnswerMode } from './answers';
import { ApiClient } from './api';
import { jsonObjectFlag, listFlag, modeFlag, type Flags, type Target } from './args';
import { CliError, UsageError } from './errors';
import { describeEvent } from './event-lines';
import { readText } from './files';
import { gradeLines, graderFlag } from './grades';
import { EXIT_CANCELLED, EXIT_INTERRUPTED, handleInterrupts, type Ending } from './interrupt';
import { call, deferred, openLive, type LiveSocket } from './live';

export interface AskOptions {
  mode?: ModeName;
  models?: string[];
  chairman?: string;
  content?: string;
  originalQuestion?: string;
  config?: Record<string, unknown>;
  /** A follow-up: the conversation it continues (its mode and panel are kept unless named). */
  conversationId?: string;
  /** Issue 37: the expected answer and its grader (`--expected`, `--grader`), checked by the server. */
  expected?: string;
  grader?: Record<string, unknown>;
}

/** A deliberation request, graded when it carries `expected` / `grader` (as POST /api/deliberations takes them). */
export type AskRequest = DeliberationRequest & { expected?: string; grader?: Record<string, unknown> };

export function buildRequest(question: string, options: AskOptions): AskRequest {
  const mode = options.mode ?? 'council';
  const request: AskRequest = {
    question,
    ...(options.mode ? { mode } : {}),
    ...(options.conversationId !== undefined ? { conversationId: options.conversationId } : {}),
    ...(options.expected !== undefined ? { expected: options.expected } : {}),
    ...(options.grader !== undefined ? { grader: options.grader } : {}),
  };
  const modeConfig: Record<string, unknown> = { ...options.config };
  // Where the mode keeps its panel, its chairman-like role and its content (ModeFacts).
  const facts = MODE_FACTS[mode];
  if (
    facts.contentField === null &&
    (options.content !== undefined || options.originalQuestion !== undefined)
  )
    throw new UsageError('--content, --content-file and --original-question are for --mode jury');
  const roster: Record<string, unknown> = facts.topLevelRoster
    ? (request as unknown as Record<string, unknown>)
    : modeConfig;
  const fields = facts.roster;
  if (options.chairman && !fields.chairman) throw new UsageError(`${mode} mode has no --chairman`);
  if (options.models) roster[fields.models] = options.models;
  if (options.chairman && fields.chairman) roster[fields.chairman] = options.chairman;
  if (options.content !== undefined) modeConfig[facts.contentField ?? 'content'] = options.content;
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
    conversationId: flags.conversation,
    expected: flags.expected,
    grader: graderFlag(flags.grader),
  };
}

/** Where the answers go while the deliberation runs: see `AnswerMode`. */
export function answerModeOf(quiet: boolean, stderrIsTerminal: boolean): AnswerMode {
  if (quiet) return 'none';
  return stderrIsTerminal ? 'stream' : 'whole';
}

function endingOf(event: DeliveredEvent): Ending | null {
  if (event.type === 'complete') return { kind: 'complete' };
  if (event.type === 'error') return { kind: 'failed', message: payloadOf<ErrorPayload>(event).message };
  if (event.type === 'cancelled')
    return { kind: 'cancelled', reason: payloadOf<CancelledPayload>(event).reason };
  return null;
}

const payloadOf = <P extends object>(event: DeliveredEvent): DeliveredEvent<P> =>
  event as unknown as DeliveredEvent<P>;

const isLive = (name: string): boolean => name === 'model_delta' || name === 'model_partial';

interface Followed {
  accepted: DeliberationAccepted;
  ending: Ending;
}

/**
 * Starts the deliberation and follows it to its end (`complete`, `error` or `cancelled`, or Ctrl-C
 * leaving it running), printing its progress and its models' answers through `printer`.
 */
async function follow(
  target: Target,
  request: DeliberationRequest,
  printer: AnswerPrinter,
): Promise<Followed> {
  const ending = deferred<Ending>();
  let resubscribe = (): void => undefined;
  let stopInterrupts = (): void => undefined;
  const socket: LiveSocket = await openLive(target, {
    onReconnect: () => resubscribe(),
    onLost: ending.reject,
    onNotice: (line) => printer.note(line),
  });
  try {
    const accepted = await call(socket, 'deliberate', request);
    const { messageId } = accepted;
    printer.note(`deliberation ${messageId} (conversation ${accepted.conversationId})`);
    stopInterrupts = handleInterrupts({
      messageId,
      printer,
      api: new ApiClient(target),
      interactive: process.stdin.isTTY === true && process.stderr.isTTY === true,
      end: ending.resolve,
      fail: ending.reject,
    });
    let lastSeq = 0;
    socket.onAny((name: string, event: DeliveredEvent | LiveEvent) => {
      if (event?.messageId !== messageId) return;
      if (isLive(name)) return printer.live(event as LiveEvent);
      const stored = event as DeliveredEvent;
      if (typeof stored.seq !== 'number' || stored.seq <= lastSeq) return;
      lastSeq = stored.seq;
      printer.stored(stored, describeEvent(stored));
      const end = endingOf(stored);
      if (end) ending.resolve(end);
    });
    // Live pieces only when they are shown: without a terminal, answers print whole as they land.
    const subscribe = () =>
      call(socket, 'subscribe', {
        messageId,
        afterSeq: lastSeq,
        ...(printer.wantsDeltas ? { deltas: true } : {}),
      }).catch(ending.reject);
    resubscribe = () => void subscribe();
    await subscribe();
    return { accepted, ending: await ending.promise };
  } finally {
    stopInterrupts();
    socket.close();
  }
}

export async function askCommand(target: Target, args: string[], flags: Flags): Promise<number> {
  const request = buildRequest(args.join(' '), await optionsOf(flags));
  const printer = new AnswerPrinter(
    answerModeOf(flags.quiet === true, process.stderr.isTTY === true),
    (text) => process.stderr.write(text),
  );
  const { accepted, ending } = await follow(target, request, printer);
  const { messageId } = accepted;
  if (ending.kind === 'detached') {
    printer.end('detached');
    process.stderr.write(
      `left deliberation ${messageId} running on the server; see it at ${target.url}/#/m/${messageId}\n`,
    );
    return EXIT_INTERRUPTED;
  }
  const view = await new ApiClient(target).json<DeliberationView<AnyResult | null>>(
    'GET',
    `/deliberations/${encodeURIComponent(messageId)}`,
  );
  // Who is missing, and what an unfinished run kept, before anything else: a degraded run never reads as whole.
  for (const line of shortfallLines(view)) process.stderr.write(`${printable(line)}\n`);
  if (ending.kind === 'failed') {
    if (flags.json) process.stdout.write(`${JSON.stringify(view, null, 2)}\n`);
    throw new CliError(ending.message);
  }
  if (ending.kind === 'cancelled') {
    printer.end('cancelled');
    process.stderr.write(`deliberation ${messageId} cancelled: ${ending.reason}\n`);
    if (flags.json) process.stdout.write(`${JSON.stringify(view, null, 2)}\n`);
    return EXIT_CANCELLED;
  }
  if (flags.json) {
    process.stdout.write(`${JSON.stringify(view, null, 2)}\n`);
    return 0;
  }
  const answer = finalTextOf(view);
  if (answer === null) throw new CliError(`deliberation ${messageId} completed without an answer`);
  process.stdout.write(`${answer}\n`);
  // A graded request: the final verdict and every answer's grade after the answer (stdout: the result).
  const graded = gradeLines(view.grades);
  if (graded.length > 0) process.stdout.write(`\n${graded.join('\n')}\n`);
  return 0;
}

/**
 * The lines that say a run is not whole: who did not answer readably and why, and, for a cancelled
 * or failed run, the answers it kept of the stage it never finished (each in full: they are not
 * in the mode's result).
 */
export function shortfallLines(view: Pick<DeliberationView, 'degraded' | 'partial'>): string[] {
  const lines: string[] = [];
  if (view.degraded) lines.push(`degraded: ${view.degraded.summary}`);
  const kept = view.partial;
  if (kept && kept.answers.length > 0) {
    const where = kept.stage ? ` of the unfinished stage ${kept.stage}` : '';
    lines.push(
      `kept ${kept.answers.length} finished answer${kept.answers.length === 1 ? '' : 's'}${where} (not a final answer):`,
    );
    for (const answer of kept.answers)
      lines.push(`--- ${answer.model} (${answer.stage}) ---`, answer.content);
  }
  return lines;
}
