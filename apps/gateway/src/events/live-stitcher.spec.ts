import type { DeliveredEvent, LiveChannelMessage, LiveEvent } from '@conclave/contracts';
import { LiveWatcher, parseLiveMessage, type WatcherHub } from './live-hub';
import { LiveStitcher, type StitchedPiece } from './live-stitcher';

const who = { stage: 'stage1', participant: 'sim/a', model: 'sim/a' };
const delta = (offset: number, text: string, call = 'stage1:a') => ({ call, ...who, offset, text });
const partial = (text: string, call = 'stage1:a') => ({ call, ...who, text });

/** What a client rebuilds from the pieces: a partial starts a call, a delta writes at its offset. */
function rebuild(pieces: StitchedPiece[]): string {
  let text = '';
  for (const piece of pieces) {
    if (piece.type === 'model_partial') text = piece.text;
    else {
      expect(piece.offset).toBe(text.length);
      text += piece.text;
    }
  }
  return text;
}

describe('LiveStitcher', () => {
  let now = 0;
  const logs: string[] = [];
  const stitcher = () =>
    new LiveStitcher(
      () => now,
      1000,
      (m) => logs.push(m),
    );
  beforeEach(() => {
    now = 0;
    logs.length = 0;
  });

  it('passes deltas that follow on, in order, coalescing what was not taken yet', () => {
    const s = stitcher();
    s.delta(delta(0, 'Hel'));
    expect(s.take()).toEqual([{ type: 'model_delta', ...who, offset: 0, text: 'Hel' }]);
    s.delta(delta(3, 'lo '));
    s.delta(delta(6, 'world'));
    expect(s.take()).toEqual([{ type: 'model_delta', ...who, offset: 3, text: 'lo world' }]);
    expect(s.take()).toEqual([]);
  });

  it('sends a partial once to a watcher that has nothing of the call, then deltas after it', () => {
    const s = stitcher();
    s.partial(partial('The answer'));
    s.delta(delta(10, ' so far'));
    const first = s.take();
    expect(first).toEqual([{ type: 'model_partial', ...who, text: 'The answer so far' }]);
    s.delta(delta(17, '.'));
    expect(s.take()).toEqual([{ type: 'model_delta', ...who, offset: 17, text: '.' }]);
  });

  it('an empty partial sends nothing; the first delta then starts the call', () => {
    const s = stitcher();
    s.partial(partial(''));
    expect(s.take()).toEqual([]);
    s.delta(delta(0, 'Hi'));
    expect(s.take()).toEqual([{ type: 'model_delta', ...who, offset: 0, text: 'Hi' }]);
  });

  it('drops duplicates and trims overlaps', () => {
    const s = stitcher();
    s.delta(delta(0, 'abcdef'));
    s.take();
    s.delta(delta(0, 'abc'));
    s.delta(delta(2, 'cdef'));
    expect(s.take()).toEqual([]);
    s.delta(delta(4, 'efgh'));
    expect(s.take()).toEqual([{ type: 'model_delta', ...who, offset: 6, text: 'gh' }]);
  });

  it('a later partial (another watcher’s, or a duplicate) adds only what goes beyond', () => {
    const s = stitcher();
    s.delta(delta(0, 'one '));
    s.take();
    s.partial(partial('one two '));
    expect(s.take()).toEqual([{ type: 'model_delta', ...who, offset: 4, text: 'two ' }]);
    s.partial(partial('one two '));
    s.partial(partial('one '));
    expect(s.take()).toEqual([]);
    s.delta(delta(8, 'three'));
    expect(s.take()).toEqual([{ type: 'model_delta', ...who, offset: 8, text: 'three' }]);
  });

  it('holds deltas that skip ahead until the partial fills the hole', () => {
    const s = stitcher();
    s.delta(delta(5, 'fghij'));
    s.delta(delta(10, 'klm'));
    expect(s.take()).toEqual([]);
    expect(s.nextDeadline()).toBe(1000);
    s.partial(partial('abcdefg'));
    const pieces = s.take();
    expect(pieces).toEqual([{ type: 'model_partial', ...who, text: 'abcdefghijklm' }]);
    expect(s.nextDeadline()).toBeNull();
    expect(logs).toEqual([]);
  });

  it('holds a skip-ahead after some text; a partial fills the hole as a delta', () => {
    const s = stitcher();
    s.delta(delta(0, 'ab'));
    s.take();
    s.delta(delta(6, 'gh'));
    expect(s.take()).toEqual([]);
    s.partial(partial('abcdef'));
    expect(s.take()).toEqual([{ type: 'model_delta', ...who, offset: 2, text: 'cdefgh' }]);
  });

  it('gives up on a hole after the wait: sends what it has at its offset, and logs', () => {
    const s = stitcher();
    s.delta(delta(0, 'ab'));
    s.take();
    s.delta(delta(5, 'fg'));
    now = 999;
    expect(s.expire()).toBe(0);
    now = 1000;
    expect(s.expire()).toBe(1);
    expect(s.take()).toEqual([{ type: 'model_delta', ...who, offset: 5, text: 'fg' }]);
    expect(logs).toHaveLength(1);
    s.delta(delta(7, 'h'));
    expect(s.take()).toEqual([{ type: 'model_delta', ...who, offset: 7, text: 'h' }]);
    expect(s.nextDeadline()).toBeNull();
  });

  it('completes a settled call from its stored answer and drops what comes of it afterwards', () => {
    const s = stitcher();
    s.delta(delta(0, 'The ans'));
    const before = s.take();
    s.complete('stage1', 'sim/a', 'The answer is 42.');
    const tail = s.take();
    expect(tail).toEqual([{ type: 'model_delta', ...who, offset: 7, text: 'wer is 42.' }]);
    expect(rebuild([...before, ...tail])).toBe('The answer is 42.');
    // the last pieces the worker published arrive after the event: nothing more goes out
    s.delta(delta(7, 'wer is 42.'));
    s.partial(partial('The answer is 42.'));
    expect(s.take()).toEqual([]);
  });

  it('completes across a hole, and leaves alone a call it has nothing of or a stored answer that differs', () => {
    const s = stitcher();
    s.delta(delta(0, 'Hello'));
    s.delta(delta(9, 'XYZ')); // a hole at 5..9
    s.complete('stage1', 'sim/a', 'Hello, world');
    expect(rebuild(s.take())).toBe('Hello, world');
    const other = { stage: 'stage1', participant: 'sim/b', model: 'sim/b' };
    s.complete('stage1', 'sim/b', 'never streamed here');
    expect(s.take()).toEqual([]);
    s.delta({ call: 'stage1:b', ...other, offset: 0, text: 'Draft <<<marker>>>' });
    s.take();
    s.complete('stage1', 'sim/b', 'Draft');
    expect(s.take()).toEqual([]);
  });

  it('does not guess between two calls of the same participant in a stage', () => {
    const s = stitcher();
    s.delta(delta(0, 'one', 'stage1:a0'));
    s.delta(delta(0, 'two', 'stage1:a1'));
    s.take();
    s.complete('stage1', 'sim/a', 'one more');
    expect(s.take()).toEqual([]);
  });

  it('keeps calls apart, each in its own order', () => {
    const s = stitcher();
    const b = { call: 'stage1:b', stage: 'stage1', participant: 2, model: null };
    s.delta(delta(0, 'a1'));
    s.delta({ ...b, offset: 0, text: 'b1' });
    s.delta({ ...b, offset: 2, text: 'b2' });
    s.delta(delta(2, 'a2'));
    expect(s.take()).toEqual([
      { type: 'model_delta', ...who, offset: 0, text: 'a1a2' },
      { type: 'model_delta', stage: 'stage1', participant: 2, model: null, offset: 0, text: 'b1b2' },
    ]);
  });

  it('rebuilds the answer whatever the order of partial and deltas', () => {
    const answer = 'The quick brown fox jumps over the lazy dog';
    const cuts = [0, 4, 10, 16, 20, 26, 31, 35, answer.length];
    const deltas = cuts.slice(1).map((end, i) => delta(cuts[i], answer.slice(cuts[i], end)));
    for (let at = 0; at <= deltas.length; at++) {
      for (let partialAt = 0; partialAt <= cuts.length - 1; partialAt++) {
        const s = stitcher();
        const pieces: StitchedPiece[] = [];
        // The watcher heard deltas from `at` on (it joined then); the partial carries what it
        // missed up to cut `partialAt` and arrives after the delta ending there.
        const sequence: (() => void)[] = [];
        deltas.forEach((d, i) => {
          if (i >= at) sequence.push(() => s.delta(d));
          if (i + 1 === partialAt) sequence.push(() => s.partial(partial(answer.slice(0, cuts[partialAt]))));
        });
        if (partialAt === 0) sequence.unshift(() => s.partial(partial('')));
        for (const step of sequence) {
          step();
          pieces.push(...s.take());
        }
        if (partialAt >= at) expect(rebuild(pieces)).toBe(answer);
      }
    }
  });
});

describe('LiveWatcher', () => {
  const message = (deltas: ReturnType<typeof delta>[]): LiveChannelMessage => ({ kind: 'deltas', deltas });
  const hub = () => {
    const calls: string[] = [];
    const fake: WatcherHub = {
      register: async (w) => void calls.push(`register ${w.id}`),
      unregister: (w) => void calls.push(`unregister ${w.id}`),
      announce: (messageId, stage) => void calls.push(`announce ${messageId} ${stage}`),
    };
    return { fake, calls };
  };
  const started = (stage: string): DeliveredEvent => ({
    type: 'model_progress',
    messageId: 'm',
    seq: 3,
    at: '',
    stage,
    participant: 'sim/a',
    state: 'started',
  });
  const flush = () => new Promise((resolve) => setImmediate(resolve));

  it('starts after the replay, announces stages, stops at close', async () => {
    const { fake, calls } = hub();
    const sent: LiveEvent[] = [];
    const watcher = new LiveWatcher(
      fake,
      'm',
      'g:1',
      (e) => sent.push(e),
      () => null,
      () => undefined,
    );
    let caughtUp: () => void = () => undefined;
    watcher.follow({ caughtUp: new Promise<void>((resolve) => (caughtUp = resolve)), isEnded: false });
    watcher.delivered(started('stage1'));
    watcher.receive(message([delta(0, 'early')]));
    await flush();
    expect(calls).toEqual([]);
    expect(sent).toEqual([]);
    caughtUp();
    await flush();
    expect(calls).toEqual(['register g:1']);
    watcher.receive(message([delta(0, 'hi')]));
    expect(sent).toEqual([{ type: 'model_delta', messageId: 'm', ...who, offset: 0, text: 'hi' }]);
    watcher.delivered(started('stage2'));
    watcher.close();
    watcher.receive(message([delta(2, ' there')]));
    expect(sent).toHaveLength(1);
    expect(calls).toEqual(['register g:1', 'announce m stage2', 'unregister g:1']);
  });

  it('never starts for a delivery that ended during its replay', async () => {
    const { fake, calls } = hub();
    const watcher = new LiveWatcher(
      fake,
      'm',
      'g:1',
      () => undefined,
      () => null,
      () => undefined,
    );
    watcher.follow({ caughtUp: Promise.resolve(), isEnded: true });
    await flush();
    watcher.close();
    expect(calls).toEqual([]);
  });

  it('coalesces deltas while the client is behind and sends them once it has room', async () => {
    const { fake } = hub();
    const sent: LiveEvent[] = [];
    let release: () => void = () => undefined;
    let behind: Promise<void> | null = null;
    const watcher = new LiveWatcher(
      fake,
      'm',
      'g:1',
      (e) => sent.push(e),
      () => behind,
      () => undefined,
    );
    watcher.follow({ caughtUp: Promise.resolve(), isEnded: false });
    await flush();
    behind = new Promise<void>((resolve) => (release = resolve));
    for (let i = 0; i < 100; i++) watcher.receive(message([delta(i, 'x')]));
    expect(sent).toEqual([]);
    behind = null;
    release();
    await flush();
    expect(sent).toEqual([{ type: 'model_delta', messageId: 'm', ...who, offset: 0, text: 'x'.repeat(100) }]);
  });
});

describe('parseLiveMessage', () => {
  it('reads what workers publish and refuses anything else', () => {
    const deltas = { kind: 'deltas', deltas: [delta(0, 'a')] };
    const partials = { kind: 'partials', replyTo: 'g:1', partials: [partial('a')] };
    expect(parseLiveMessage(JSON.stringify(deltas))).toEqual(deltas);
    expect(parseLiveMessage(JSON.stringify(partials))).toEqual(partials);
    expect(parseLiveMessage('nope')).toBeNull();
    expect(
      parseLiveMessage(JSON.stringify({ kind: 'deltas', deltas: [{ ...delta(0, 'a'), offset: -1 }] })),
    ).toBeNull();
    expect(parseLiveMessage(JSON.stringify({ kind: 'partials', partials: [] }))).toBeNull();
    expect(parseLiveMessage(JSON.stringify({ kind: 'deltas', deltas: [{ call: 'x' }] }))).toBeNull();
  });
});
