import {
  appendLivePiece,
  TERMINAL_EVENT_TYPES,
  type DeliveredEvent,
  type LiveEvent,
  type ModelProgressPayload,
} from '@conclave/contracts';
import { participantLabel, stageLabel } from './event-lines';

/**
 * How `ask` shows the models' answers while a deliberation runs. They go to stderr with the
 * progress lines; stdout keeps the result alone.
 * - `stream`: stderr is a terminal: each answer as it is written, one call at a time (the others'
 *   text waits, and shows whole when its turn comes), so calls running side by side never mix.
 * - `whole`: no terminal: each answer in one piece as it lands, in plain lines.
 * - `none`: `--quiet`: progress lines only.
 */
export type AnswerMode = 'stream' | 'whole' | 'none';

// Control characters, C1 included: a model's text must not move the cursor, recolour or retitle
// the terminal, or rewrite what is already on it.
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g;

/** Model text as a terminal should get it: characters, tabs and newlines only. */
export const printable = (text: string): string => text.replace(CONTROL, '');

export const TRUNCATED_NOTE = '[cut short: the model reached its length limit]';

const INCOMPLETE: Record<string, string> = {
  complete: 'incomplete: the deliberation ended',
  error: 'incomplete: the deliberation failed',
  cancelled: 'incomplete: the deliberation was cancelled',
  detached: 'incomplete: it goes on on the server',
};

interface Call {
  who: string;
  stage: string;
  /** The answer so far, as the model wrote it; its whole answer once it succeeded. */
  text: string;
  settled: boolean;
  truncated: boolean;
  /** Its block has been printed (or is being streamed). */
  shown: boolean;
}

/** What waits while another call's answer streams. */
type Waiting = { kind: 'line'; text: string } | { kind: 'answer'; call: Call; note: string | null };

/** Writes text, knowing whether the cursor is at the start of a line; can hold everything back. */
class Output {
  private held: string[] | null = null;
  atLineStart = true;

  constructor(private readonly sink: (text: string) => void) {}

  write(text: string): void {
    if (text === '') return;
    this.atLineStart = text.endsWith('\n');
    if (this.held) this.held.push(text);
    else this.sink(text);
  }

  endLine(): void {
    if (!this.atLineStart) this.write('\n');
  }

  /**
   * Holds what is written until `release` (while a question waits for its answer). What was held
   * starts with `resumed` when it is let through (the head of an answer the question cut into).
   */
  hold(prompt: string, resumed: string): void {
    if (!this.held) {
      if (!this.atLineStart) this.sink('\n');
      this.held = [];
      this.resumed = resumed;
    }
    this.sink(prompt);
    // Whoever answers ends the line with Enter (or is given a newline when the question goes away).
    this.atLineStart = true;
  }

  release(): void {
    const held = this.held;
    this.held = null;
    if (held && held.length > 0) this.sink(this.resumed + held.join(''));
  }

  private resumed = '';
}

type Progress = DeliveredEvent<ModelProgressPayload>;

/**
 * Prints a deliberation's progress lines and its models' answers (see `AnswerMode`), from its
 * stored events (`stored`) and its live pieces (`live`). Calls are told apart by stage and
 * participant, as `model_progress` names them.
 */
export class AnswerPrinter {
  private readonly out: Output;
  private readonly calls = new Map<string, Call>();
  /** The call whose answer is being streamed; everything else waits until it settles. */
  private current: Call | null = null;
  /** The part of the current call's text already written. */
  private written = '';
  private readonly waiting: Waiting[] = [];
  private finished = false;

  constructor(
    private readonly mode: AnswerMode,
    sink: (text: string) => void,
  ) {
    this.out = new Output(sink);
  }

  /** Whether this printer shows live pieces (the subscription should ask for them). */
  get wantsDeltas(): boolean {
    return this.mode === 'stream';
  }

  /** A stored event, with its progress line (null when it has none). */
  stored(event: DeliveredEvent, line: string | null): void {
    if (event.type === 'model_progress') this.progress(event as unknown as Progress, line);
    else if (TERMINAL_EVENT_TYPES.includes(event.type)) this.finish(event.type, line);
    else this.say(line);
  }

  /** A live piece of a call's answer: `model_delta` continues it, `model_partial` is all of it so far. */
  live(event: LiveEvent): void {
    if (this.mode !== 'stream') return;
    const call = this.callOf(event.stage, event.participant);
    if (call.settled) return;
    const text =
      event.type === 'model_partial' ? event.text : appendLivePiece(call.text, event.offset, event.text);
    if (text === call.text) return;
    call.text = text;
    if (this.current === call) this.catchUp();
    else if (this.current === null) this.open(call);
  }

  /**
   * The deliberation ended without its terminal event here (cancelled by this CLI, or left
   * running): closes what streams and prints every partial answer. Nothing when it has ended.
   */
  end(kind: 'cancelled' | 'detached'): void {
    if (!this.finished) this.finish(kind, null);
  }

  /** A line of its own (a notice), after whatever is being streamed. */
  note(text: string): void {
    this.say(text);
  }

  /** Holds all output back behind a question (Ctrl-C); `resume` lets it through again. */
  pause(prompt: string): void {
    const call = this.current;
    this.out.hold(prompt, call ? `── ${call.who} · ${stageLabel(call.stage)} (continued)\n` : '');
  }

  resume(): void {
    this.out.release();
  }

  private callOf(stage: string, participant: string | number): Call {
    const key = `${stage}\u0000${typeof participant}:${participant}`;
    let call = this.calls.get(key);
    if (!call) {
      call = {
        who: participantLabel(participant),
        stage,
        text: '',
        settled: false,
        truncated: false,
        shown: false,
      };
      this.calls.set(key, call);
    }
    return call;
  }

  private progress(event: Progress, line: string | null): void {
    const call = this.callOf(event.stage, event.participant);
    if (event.state === 'succeeded') {
      call.text = event.content ?? call.text;
      call.truncated = event.truncated === true;
      this.settle(call, null, line);
    } else if (event.state === 'failed') {
      this.settle(call, 'incomplete: the call failed', line);
    } else if (event.state === 'retrying') {
      // A new attempt writes its answer from the start.
      if (this.current === call) this.close('incomplete: the call is retried');
      call.text = '';
      call.shown = false;
      this.say(line);
      this.next();
    } else {
      this.say(line);
    }
  }

  /** A call settled: its block (streamed, or now whole), then its line, then whatever waited. */
  private settle(call: Call, note: string | null, line: string | null): void {
    if (call.settled) return this.say(line);
    call.settled = true;
    const hasAnswer = this.mode !== 'none' && (call.text !== '' || note === null);
    if (this.current === call) {
      this.catchUp();
      this.close(note);
    } else if (hasAnswer && !call.shown) {
      this.emit({ kind: 'answer', call, note });
    }
    this.say(line);
    this.next();
  }

  /** The deliberation ended: close what streams, print what waited and every answer left partial. */
  private finish(type: string, line: string | null): void {
    this.finished = true;
    const note = INCOMPLETE[type] ?? INCOMPLETE.complete;
    if (this.current) this.close(note);
    this.flush();
    for (const call of this.calls.values()) {
      if (call.settled) continue;
      call.settled = true;
      if (call.text !== '' && !call.shown) this.block(call, note);
    }
    this.say(line);
  }

  private say(line: string | null): void {
    if (line !== null) this.emit({ kind: 'line', text: line });
  }

  private emit(item: Waiting): void {
    if (this.current) this.waiting.push(item);
    else if (item.kind === 'line') {
      this.out.endLine();
      this.out.write(`${item.text}\n`);
    } else this.block(item.call, item.note);
  }

  private header(call: Call): void {
    this.out.endLine();
    this.out.write(`── ${call.who} · ${stageLabel(call.stage)}\n`);
  }

  private footer(call: Call, note: string | null): void {
    this.out.endLine();
    if (call.truncated) this.out.write(`${TRUNCATED_NOTE}\n`);
    if (note !== null) this.out.write(`[${note}]\n`);
  }

  /** A whole answer in one piece. */
  private block(call: Call, note: string | null): void {
    call.shown = true;
    this.header(call);
    this.out.write(printable(call.text));
    this.footer(call, note);
  }

  /** Starts streaming a call's answer: its header and its text so far. */
  private open(call: Call): void {
    this.current = call;
    call.shown = true;
    this.written = '';
    this.header(call);
    this.catchUp();
  }

  /** Writes what the current call's text has beyond what is on screen. */
  private catchUp(): void {
    const call = this.current;
    if (!call) return;
    if (!call.text.startsWith(this.written)) {
      // Its text changed under what was shown (a resent answer so far, say): show it again.
      this.out.endLine();
      this.out.write('[the answer, again from its start:]\n');
      this.written = '';
    }
    this.out.write(printable(call.text.slice(this.written.length)));
    this.written = call.text;
  }

  private close(note: string | null): void {
    const call = this.current;
    if (!call) return;
    this.current = null;
    this.written = '';
    this.footer(call, note);
  }

  /** Prints what waited, in order. */
  private flush(): void {
    for (const item of this.waiting.splice(0)) this.emit(item);
  }

  /** Once nothing streams: print what waited, then stream the next call that is writing. */
  private next(): void {
    if (this.current) return;
    this.flush();
    if (this.mode !== 'stream') return;
    for (const call of this.calls.values()) {
      if (!call.settled && !call.shown && call.text !== '') return this.open(call);
    }
  }
}
