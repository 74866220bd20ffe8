import type { DeliveredEvent, LiveEvent } from '@conclave/contracts';
import { AnswerPrinter, printable, type AnswerMode } from './answers';
import { answerModeOf } from './ask';
import { describeEvent } from './event-lines';

let seq = 0;
const stored = (type: string, payload: object = {}): DeliveredEvent =>
  ({ type, messageId: 'm', seq: ++seq, at: '', ...payload }) as DeliveredEvent;
const progress = (participant: string | number, state: string, extra: object = {}, stage = 'stage1') =>
  stored('model_progress', { stage, participant, state, ...extra });
const delta = (participant: string | number, offset: number, text: string, stage = 'stage1'): LiveEvent => ({
  type: 'model_delta',
  messageId: 'm',
  stage,
  participant,
  model: typeof participant === 'number' ? null : participant,
  text,
  offset,
});
const partial = (participant: string, text: string): LiveEvent => ({
  type: 'model_partial',
  messageId: 'm',
  stage: 'stage1',
  participant,
  model: participant,
  text,
});

/** A printer writing into a string; `feed` takes stored and live events in arrival order. */
function printer(mode: AnswerMode) {
  let output = '';
  const p = new AnswerPrinter(mode, (text) => (output += text));
  return {
    printer: p,
    feed: (...events: (DeliveredEvent | LiveEvent)[]) => {
      for (const event of events) {
        if ('seq' in event) p.stored(event, describeEvent(event));
        else p.live(event);
      }
    },
    output: () => output,
  };
}

describe('model text on a terminal', () => {
  it('keeps text, tabs and newlines and drops what would drive the terminal', () => {
    expect(printable('a\tb\nc\r\n\x1b[2J\x1b]0;title\x07d\u009be')).toBe('a\tb\nc\n[2J]0;titlede');
  });
});

describe('answers while a deliberation runs', () => {
  it('without a terminal, prints each answer whole when it lands, never a fragment', () => {
    const { feed, output } = printer('whole');
    feed(
      progress('sim/a', 'started'),
      progress('sim/b', 'started'),
      delta('sim/a', 0, 'Alpha so'), // not asked for; ignored if sent anyway
      progress('sim/b', 'succeeded', { responseTimeMs: 5, content: 'Beta says\nseven.' }),
      progress('sim/a', 'succeeded', { responseTimeMs: 9, content: 'Alpha says 42.', truncated: true }),
      progress(3, 'failed', { error: 'timed out' }, 'round_1'),
      stored('stage1_complete', { data: [{}, {}] }),
      stored('complete'),
    );
    expect(output()).toBe(
      [
        '[stage1] sim/a started',
        '[stage1] sim/b started',
        '── sim/b · stage1',
        'Beta says',
        'seven.',
        '[stage1] sim/b succeeded (5 ms)',
        '── sim/a · stage1',
        'Alpha says 42.',
        '[cut short: the model reached its length limit]',
        '[stage1] sim/a succeeded (9 ms)',
        '[round 1] #3 failed: timed out',
        '[stage1] complete: 2 answers',
        'complete',
        '',
      ].join('\n'),
    );
  });

  it('with --quiet, prints the progress lines only', () => {
    const { feed, output } = printer('none');
    feed(progress('sim/a', 'started'), delta('sim/a', 0, 'Alpha'));
    feed(
      progress('sim/a', 'succeeded', { responseTimeMs: 9, content: 'Alpha says 42.' }),
      stored('complete'),
    );
    expect(output()).toBe('[stage1] sim/a started\n[stage1] sim/a succeeded (9 ms)\ncomplete\n');
  });

  it('on a terminal, streams one call at a time; the others wait and follow whole', () => {
    const { feed, output } = printer('stream');
    feed(progress('sim/a', 'started'), progress('sim/b', 'started'), delta('sim/a', 0, 'Alpha '));
    expect(output()).toBe('[stage1] sim/a started\n[stage1] sim/b started\n── sim/a · stage1\nAlpha ');
    feed(
      delta('sim/b', 0, 'Beta '),
      delta('sim/a', 6, 'says'),
      delta('sim/a', 0, 'Alpha '), // a duplicate
      delta('sim/b', 5, 'says seven.'),
      progress('sim/b', 'succeeded', { responseTimeMs: 5, content: 'Beta says seven.' }),
    );
    // sim/b's text and its line wait behind sim/a's, which goes on on the same line
    expect(output()).toBe('[stage1] sim/a started\n[stage1] sim/b started\n── sim/a · stage1\nAlpha says');
    feed(
      delta('sim/a', 10, ' 42.'),
      progress('sim/a', 'succeeded', { responseTimeMs: 9, content: 'Alpha says 42.' }),
      stored('stage1_complete', { data: [{}, {}] }),
    );
    expect(output()).toBe(
      [
        '[stage1] sim/a started',
        '[stage1] sim/b started',
        '── sim/a · stage1',
        'Alpha says 42.',
        '[stage1] sim/a succeeded (9 ms)',
        '── sim/b · stage1',
        'Beta says seven.',
        '[stage1] sim/b succeeded (5 ms)',
        '[stage1] complete: 2 answers',
        '',
      ].join('\n'),
    );
  });

  it('on a terminal, streams the next writer once the current one is done, from its text so far', () => {
    const { feed, output } = printer('stream');
    feed(
      delta('sim/a', 0, 'A1'),
      delta('sim/b', 0, 'B1'),
      progress('sim/a', 'succeeded', { responseTimeMs: 1, content: 'A1' }),
      delta('sim/b', 2, ' B2'),
      progress('sim/b', 'succeeded', { responseTimeMs: 2, content: 'B1 B2', truncated: true }),
    );
    expect(output()).toBe(
      [
        '── sim/a · stage1',
        'A1',
        '[stage1] sim/a succeeded (1 ms)',
        '── sim/b · stage1',
        'B1 B2',
        '[cut short: the model reached its length limit]',
        '[stage1] sim/b succeeded (2 ms)',
        '',
      ].join('\n'),
    );
  });

  it('takes the answer so far of a resubscription, and the final answer as authoritative', () => {
    const { feed, output } = printer('stream');
    feed(delta('sim/a', 0, 'Hello'), partial('sim/a', 'Hello, wor'), delta('sim/a', 5, ', w'));
    expect(output()).toBe('── sim/a · stage1\nHello, wor');
    feed(progress('sim/a', 'succeeded', { responseTimeMs: 3, content: 'Goodbye.' }));
    expect(output()).toBe(
      '── sim/a · stage1\nHello, wor\n[the answer, again from its start:]\nGoodbye.\n[stage1] sim/a succeeded (3 ms)\n',
    );
  });

  it('keeps every partial answer, marked incomplete, when the deliberation is cancelled', () => {
    const { feed, output } = printer('stream');
    feed(
      delta('sim/a', 0, 'Alpha is'),
      delta('sim/b', 0, 'Beta was'),
      progress('sim/c', 'succeeded', { responseTimeMs: 4, content: 'Gamma.' }),
      stored('cancelled', { reason: 'Stopped by its owner' }),
      delta('sim/a', 8, ' late'),
    );
    expect(output()).toBe(
      [
        '── sim/a · stage1',
        'Alpha is',
        '[incomplete: the deliberation was cancelled]',
        '── sim/c · stage1',
        'Gamma.',
        '[stage1] sim/c succeeded (4 ms)',
        '── sim/b · stage1',
        'Beta was',
        '[incomplete: the deliberation was cancelled]',
        '',
      ].join('\n'),
    );
  });

  it('names anonymous participants by number and marks a failed call that had written', () => {
    const { feed, output } = printer('stream');
    feed(delta(2, 0, 'My estimate', 'round_1'), progress(2, 'failed', { error: 'cut off' }, 'round_1'));
    expect(output()).toBe(
      '── #2 · round 1\nMy estimate\n[incomplete: the call failed]\n[round 1] #2 failed: cut off\n',
    );
  });

  it('holds everything behind a question, then lets it through', () => {
    const { feed, output, printer: p } = printer('stream');
    feed(delta('sim/a', 0, 'Alpha'));
    p.pause('Cancel? ');
    feed(delta('sim/a', 5, ' more'));
    expect(output()).toBe('── sim/a · stage1\nAlpha\nCancel? ');
    p.resume();
    p.end('detached');
    expect(output()).toBe(
      '── sim/a · stage1\nAlpha\nCancel? ── sim/a · stage1 (continued)\n more\n[incomplete: it goes on on the server]\n',
    );
  });

  it('streams only to a terminal, and not with --quiet', () => {
    expect(answerModeOf(false, true)).toBe('stream');
    expect(answerModeOf(false, false)).toBe('whole');
    expect(answerModeOf(true, true)).toBe('none');
    expect(new AnswerPrinter('stream', () => undefined).wantsDeltas).toBe(true);
    expect(new AnswerPrinter('whole', () => undefined).wantsDeltas).toBe(false);
    expect(new AnswerPrinter('none', () => undefined).wantsDeltas).toBe(false);
  });
});
