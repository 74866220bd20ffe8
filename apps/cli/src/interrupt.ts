import type { DeliberationView } from '@conclave/contracts';
import type { AnswerPrinter } from './answers';
import type { ApiClient } from './api';
import { CliError } from './errors';

/** Exit code when the deliberation was cancelled (by Ctrl-C here, or by anyone else). */
export const EXIT_CANCELLED = 3;
/** Exit code after Ctrl-C left the deliberation running (128 + SIGINT, as shells report it). */
export const EXIT_INTERRUPTED = 130;

/** How a followed deliberation ended, as far as `ask` is concerned. */
export type Ending =
  | { kind: 'complete' }
  | { kind: 'failed'; message: string }
  | { kind: 'cancelled'; reason: string }
  /** Ctrl-C, then "no": the deliberation goes on without us. */
  | { kind: 'detached' };

/** A question on the terminal waiting for a line of answer. */
interface Question {
  /** The line typed (without its newline), '' at end of input, null when dismissed. */
  answer: Promise<string | null>;
  dismiss: () => void;
}

/** Reads one line from a terminal's stdin (in its usual line mode, where Ctrl-C is still a signal). */
function readLine(input: NodeJS.ReadStream): Question {
  let settle!: (value: string | null) => void;
  const answer = new Promise<string | null>((resolve) => (settle = resolve));
  let text = '';
  let done = false;
  const finish = (value: string | null) => {
    if (done) return;
    done = true;
    input.off('data', onData);
    input.off('end', onEnd);
    input.pause();
    settle(value);
  };
  const onData = (chunk: Buffer | string) => {
    text += String(chunk);
    const newline = text.indexOf('\n');
    if (newline >= 0) finish(text.slice(0, newline).replace(/\r$/, ''));
  };
  const onEnd = () => finish(text);
  input.on('data', onData);
  input.once('end', onEnd);
  input.resume();
  return { answer, dismiss: () => finish(null) };
}

export interface InterruptContext {
  messageId: string;
  printer: AnswerPrinter;
  api: ApiClient;
  /** Whether there is a terminal to ask on: stdin and stderr are both TTYs. */
  interactive: boolean;
  /** Ends following the deliberation. */
  end: (ending: Ending) => void;
  fail: (error: unknown) => void;
}

/** Asks the server to cancel; null when the deliberation had already ended (its ending follows). */
async function cancelOnServer(context: InterruptContext): Promise<Ending | null> {
  const { messageId, printer } = context;
  try {
    const view = await context.api.json<DeliberationView>(
      'POST',
      `/deliberations/${encodeURIComponent(messageId)}/cancel`,
    );
    printer.resume();
    return { kind: 'cancelled', reason: view.error ?? 'cancelled' };
  } catch (error) {
    printer.resume();
    if (error instanceof CliError && error.status === 409) {
      printer.note(`could not cancel: ${error.message}`);
      return null;
    }
    throw error;
  }
}

/**
 * Ctrl-C while a deliberation runs. With a terminal to ask on: "Cancel the deliberation on the
 * server? [y/N]": y cancels it, anything else leaves it running and quits. Without one (stdin or
 * stderr is not a terminal), Ctrl-C cancels it without asking. A second Ctrl-C quits at once.
 * Returns the function that stops listening.
 */
export function handleInterrupts(context: InterruptContext): () => void {
  let handling = false;
  let question: Question | null = null;

  const decide = async (): Promise<Ending | null> => {
    const { messageId, printer } = context;
    if (context.interactive) {
      printer.pause(`Cancel the deliberation on the server? [y/N] `);
      question = readLine(process.stdin);
      const answer = await question.answer;
      question = null;
      if (answer === null) return null;
      if (!/^\s*y(es)?\s*$/i.test(answer)) return { kind: 'detached' };
    } else {
      printer.pause(
        `interrupted: cancelling deliberation ${messageId} (no terminal to ask on; Ctrl-C again to quit at once)\n`,
      );
    }
    return cancelOnServer(context);
  };

  const onInterrupt = () => {
    if (handling) {
      process.stderr.write('\n');
      process.exit(EXIT_INTERRUPTED);
    }
    handling = true;
    decide().then((ending) => {
      handling = false;
      if (ending) context.end(ending);
    }, context.fail);
  };

  process.on('SIGINT', onInterrupt);
  return () => {
    process.off('SIGINT', onInterrupt);
    if (question) {
      // The deliberation ended while the question waited: there is nothing left to cancel.
      question.dismiss();
      process.stderr.write('\n');
    }
    context.printer.resume();
  };
}
