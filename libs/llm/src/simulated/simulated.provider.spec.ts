import fc from 'fast-check';
import { ModelCallError } from '../provider';
import { heavyTailedLatency, parseSimModel } from './directives';
import { hashString, seededRandom } from './random';
import {
  SimulatedProvider,
  jitteredLatency,
  streamPiecesOf,
  type SimulatedResponder,
} from './simulated.provider';
import { sleep } from '../../../../test/support/wait';

const echo: SimulatedResponder = {
  kind: 'answer',
  matches: () => true,
  respond: (ctx) => `${ctx.model} says ${Math.floor(ctx.random() * 1000)} (${ctx.flags.join(',')})`,
};
const rank: SimulatedResponder = {
  kind: 'rank',
  matches: (p) => p.startsWith('RANK'),
  respond: () => 'ranked',
};

const provider = (seed = 's') =>
  new SimulatedProvider({ responders: [rank], fallback: echo, latencyMs: 0, seed });
const ask = (model: string, prompt = 'hello', signal = AbortSignal.timeout(2000)) =>
  provider().complete({ model, messages: [{ role: 'user', content: prompt }], signal });

describe('SimulatedProvider', () => {
  it('is deterministic for a seed and differs by model and seed', async () => {
    const a1 = await ask('sim/a');
    expect((await ask('sim/a')).content).toBe(a1.content);
    expect((await ask('sim/b')).content).not.toBe(a1.content);
    const other = await provider('t').complete({
      model: 'sim/a',
      messages: [{ role: 'user', content: 'hello' }],
      signal: AbortSignal.timeout(2000),
    });
    expect(other.content).not.toBe(a1.content);
    expect(a1).toMatchObject({ simulated: true, servedModel: 'sim/a', usage: { costUsd: 0 } });
  });

  it("hands a graded call's expected answer to its responder, and nothing when the call has none", async () => {
    const graded: SimulatedResponder = {
      kind: 'answer',
      matches: () => true,
      respond: (ctx) => (ctx.expected === undefined ? 'no expected answer' : `expected ${ctx.expected}`),
    };
    const sim = new SimulatedProvider({ responders: [], fallback: graded, latencyMs: 0, seed: 's' });
    const call = { model: 'sim/a:acc70', messages: [{ role: 'user' as const, content: 'q' }] };
    expect((await sim.complete({ ...call, signal: AbortSignal.timeout(2000), expected: '42' })).content).toBe(
      'expected 42',
    );
    expect((await sim.complete({ ...call, signal: AbortSignal.timeout(2000) })).content).toBe(
      'no expected answer',
    );
  });

  it('fails, malforms or hangs on request, optionally only for one prompt kind', async () => {
    await expect(ask('sim/a:fail')).rejects.toMatchObject({ kind: 'http', retryable: false });
    expect((await ask('sim/a:fail@rank')).content).toContain('sim/a:fail@rank says');
    await expect(ask('sim/a:fail@rank', 'RANK these')).rejects.toBeInstanceOf(ModelCallError);
    expect((await ask('sim/a:malformed@rank', 'RANK these')).content).not.toBe('ranked');
    await expect(ask('sim/a:timeout', 'x', AbortSignal.timeout(50))).rejects.toMatchObject({
      kind: 'timeout',
    });
  });

  it('fails a transient call once with a retryable error', async () => {
    const sim = provider();
    const request = { model: 'sim/a:transient', messages: [{ role: 'user' as const, content: 'q' }] };
    await expect(sim.complete({ ...request, signal: AbortSignal.timeout(1000) })).rejects.toMatchObject({
      retryable: true,
      status: 503,
    });
    await expect(sim.complete({ ...request, signal: AbortSignal.timeout(1000) })).resolves.toMatchObject({
      simulated: true,
    });
  });

  it('varies latency by ±jitter around the base, and not at all with jitter 0', () => {
    expect(jitteredLatency(200, 0.5, 0)).toBe(100);
    expect(jitteredLatency(200, 0.5, 0.5)).toBe(200);
    expect(jitteredLatency(200, 0.5, 1)).toBe(300);
    expect(jitteredLatency(200, 0.1, 0)).toBe(180);
    expect(jitteredLatency(200, 0, 0.99)).toBe(200);
    expect(jitteredLatency(0, 0.5, 0.99)).toBe(0);
  });

  it('draws a heavy-tailed latency: lognormal around its median, the same for the same seed and call', () => {
    expect(parseSimModel('sim/x:heavy')).toMatchObject({
      heavy: [{ medianMs: null, kind: null }],
      flags: [],
    });
    expect(parseSimModel('sim/x:heavy400@answer').heavy).toEqual([{ medianMs: 400, kind: 'answer' }]);
    expect(heavyTailedLatency(1000, 0.5, 0.25)).toBe(1000); // z = 0: the median
    expect(heavyTailedLatency(1000, 0.999999, 0)).toBe(100_000); // capped at 100× the median
    // Over many calls: half under the median, a tail several times longer (σ = 1: p95 ≈ 5.2×).
    const draws = Array.from({ length: 4000 }, (_, i) => {
      const random = seededRandom(hashString(`heavy-${i}`));
      return heavyTailedLatency(1000, random(), random());
    }).sort((a, b) => a - b);
    expect(draws[2000]).toBeGreaterThan(900);
    expect(draws[2000]).toBeLessThan(1100);
    expect(draws[3800]).toBeGreaterThan(4000);
    expect(draws[3800]).toBeLessThan(6500);
  });

  it('waits the heavy-tailed latency it drew, and the same on a second run of the same call', async () => {
    const sim = () =>
      new SimulatedProvider({
        responders: [rank],
        fallback: echo,
        latencyMs: 40,
        latencyJitter: 0,
        seed: 'heavy',
      });
    // On jest's clock, not the machine's: the waits are exactly what was drawn, however busy the host.
    jest.useFakeTimers();
    try {
      const timed = async (provider: SimulatedProvider, model: string) => {
        const started = performance.now();
        await provider.complete({
          model,
          messages: [{ role: 'user', content: 'How long?' }],
          signal: new AbortController().signal,
        });
        return performance.now() - started;
      };
      const run = async () => {
        const waits = Promise.all(['a', 'b', 'c', 'd', 'e', 'f'].map((p) => timed(sim(), `sim/${p}:heavy`)));
        await jest.runAllTimersAsync();
        return waits;
      };
      const first = await run();
      const again = await run();
      // Not the configured 40 ms: drawn per call (and not all alike), and the same draw each time.
      expect(first.some((ms) => Math.round(ms) !== 40)).toBe(true);
      expect(new Set(first.map((ms) => Math.round(ms))).size).toBeGreaterThan(1);
      expect(again).toEqual(first);
    } finally {
      jest.useRealTimers();
    }
  });

  it('parses directives', () => {
    expect(parseSimModel('sim/hermes:delay250@answer:rank3:fail@synthesis')).toEqual({
      persona: 'hermes',
      faults: [{ fault: 'fail', kind: 'synthesis' }],
      delays: [{ ms: 250, kind: 'answer' }],
      flags: ['rank3'],
    });
  });
});

describe('SimulatedProvider streaming', () => {
  const long: SimulatedResponder = {
    kind: 'answer',
    matches: () => true,
    respond: () => 'one two three four five six seven eight nine ten eleven twelve',
  };
  const streaming = (latencyMs: number, streamPieces?: number) =>
    new SimulatedProvider({
      responders: [],
      fallback: long,
      latencyMs,
      latencyJitter: 0,
      seed: 's',
      ...(streamPieces !== undefined ? { streamPieces } : {}),
    });

  it('writes the answer in pieces, in order, that add up to it, over the call latency', async () => {
    const pieces: { text: string; at: number }[] = [];
    const started = Date.now();
    const completion = await streaming(200, 4).complete({
      model: 'sim/a',
      messages: [{ role: 'user', content: 'q' }],
      signal: AbortSignal.timeout(5000),
      onDelta: (text) => pieces.push({ text, at: Date.now() - started }),
    });
    expect(pieces).toHaveLength(4);
    expect(pieces.map((p) => p.text).join('')).toBe(completion.content);
    // The first piece comes before the answer is whole, the last at the end of the latency.
    expect(pieces[0].at).toBeLessThan(pieces[3].at);
    expect(pieces[3].at).toBeGreaterThanOrEqual(190);
    expect(completion.finishReason).toBe('stop');
    const whole = await streaming(0).complete({
      model: 'sim/a',
      messages: [{ role: 'user', content: 'q' }],
      signal: AbortSignal.timeout(5000),
    });
    expect(whole.content).toBe(completion.content);
  });

  it('ends a streamed answer at its latency when the event loop was busy, not later by the delay', async () => {
    const pieces: number[] = [];
    const started = Date.now();
    const call = streaming(400, 8).complete({
      model: 'sim/a',
      messages: [{ role: 'user', content: 'q' }],
      signal: AbortSignal.timeout(5000),
      onDelta: () => pieces.push(Date.now() - started),
    });
    // A busy worker: the event loop is blocked from 10 to 410 ms, over the times seven of the eight
    // pieces are due. Chained timers would push every piece back by it (the answer ending after
    // 400 + 400 ms); wide margins, for a loaded machine.
    setTimeout(() => {
      const until = Date.now() + 400;
      while (Date.now() < until) {
        /* busy */
      }
    }, 10);
    await call;
    const elapsed = Date.now() - started;
    expect(pieces).toHaveLength(8);
    // The pieces that fell due while the loop was blocked come together when it is free.
    expect(pieces[6] - pieces[0]).toBeLessThan(50);
    expect(elapsed).toBeGreaterThanOrEqual(395);
    expect(elapsed).toBeLessThan(700);
  });

  it('wakes once per millisecond in which pieces fall due, however many answers stream at once', async () => {
    // On a fake clock every answer starts in the same millisecond, however busy the machine is: the
    // count of timers is then exact (on the real clock, starts spread over a few milliseconds of a
    // loaded CI host and the count drifted with them).
    jest.useFakeTimers();
    const provider = streaming(200, 10);
    const timers = jest.spyOn(global, 'setTimeout');
    try {
      const received: string[][] = Array.from({ length: 40 }, () => []);
      const calls = Promise.all(
        received.map((pieces, i) =>
          provider.complete({
            model: `sim/m${i}`,
            messages: [{ role: 'user', content: 'q' }],
            signal: new AbortController().signal,
            onDelta: (text) => pieces.push(text),
          }),
        ),
      );
      await jest.advanceTimersByTimeAsync(250);
      const answers = await calls;
      answers.forEach((answer, i) => expect(received[i].join('')).toBe(answer.content));
      // 400 pieces due at ten moments: ten timers, where a timer per piece would be 400.
      expect(received.every((pieces) => pieces.length === 10)).toBe(true);
      expect(timers.mock.calls.length).toBe(10);
    } finally {
      timers.mockRestore();
      jest.useRealTimers();
    }
  });

  it('leaves no timer behind when a streamed answer is stopped (nothing of it stays scheduled)', async () => {
    const timers = () => process.getActiveResourcesInfo().filter((kind) => kind === 'Timeout').length;
    const before = timers();
    const controller = new AbortController();
    const call = streaming(60_000, 4).complete({
      model: 'sim/a',
      messages: [{ role: 'user', content: 'q' }],
      signal: controller.signal,
      onDelta: () => undefined,
    });
    // Its first piece is due in 15 s: one timer waits for it.
    expect(timers()).toBe(before + 1);
    controller.abort();
    await expect(call).rejects.toThrow();
    expect(timers()).toBe(before);
  });

  /** A streamed call of 8 pieces over 400 ms that aborts itself from its `stopAt`-th piece. */
  const stoppedFromPiece = (stopAt: number) => {
    const pieces: string[] = [];
    const controller = new AbortController();
    const call = streaming(400, 8).complete({
      model: 'sim/a',
      messages: [{ role: 'user', content: 'q' }],
      signal: controller.signal,
      onDelta: (text) => {
        pieces.push(text);
        if (pieces.length === stopAt) controller.abort();
      },
    });
    return { pieces, call };
  };

  it('stops writing when the call is aborted mid-stream, for good', async () => {
    const { pieces, call } = stoppedFromPiece(2);
    await expect(call).rejects.toMatchObject({ kind: 'aborted' });
    // Not now, nor once the pieces still due would have come (50 ms apart).
    expect(pieces).toHaveLength(2);
    await sleep(200);
    expect(pieces).toHaveLength(2);
  });

  it('an abort from a piece stops the pieces that fell due with it', async () => {
    const { pieces, call } = stoppedFromPiece(1);
    // A busy loop for 300 ms: about six pieces fall due, and come in one turn, as the first stops the call.
    const until = Date.now() + 300;
    while (Date.now() < until);
    await expect(call).rejects.toMatchObject({ kind: 'aborted' });
    expect(pieces).toHaveLength(1);
  });

  it('with no latency to spread pieces over, an abort still stops it: before the call, or from a piece', async () => {
    const request = (signal: AbortSignal, onDelta: (text: string) => void) =>
      streaming(0, 4).complete({
        model: 'sim/a',
        messages: [{ role: 'user', content: 'q' }],
        signal,
        onDelta,
      });
    const before: string[] = [];
    await expect(request(AbortSignal.abort(), (text) => before.push(text))).rejects.toMatchObject({
      kind: 'aborted',
    });
    expect(before).toEqual([]);
    const controller = new AbortController();
    const during: string[] = [];
    const call = request(controller.signal, (text) => {
      during.push(text);
      controller.abort();
    });
    await expect(call).rejects.toMatchObject({ kind: 'aborted' });
    expect(during).toHaveLength(1);
    // Stopped by its last piece: still a stopped call, not an answer.
    const last = new AbortController();
    const pieces: string[] = [];
    const atLast = request(last.signal, (text) => {
      pieces.push(text);
      if (pieces.length === 4) last.abort();
    });
    await expect(atLast).rejects.toMatchObject({ kind: 'aborted' });
    expect(pieces).toHaveLength(4);
  });

  it('cuts a text into at most n runs of whole words', () => {
    expect(streamPiecesOf('a b c d e', 2)).toEqual(['a b ', 'c d e']);
    expect(streamPiecesOf('a b', 5)).toEqual(['a ', 'b']);
    expect(streamPiecesOf('', 3)).toEqual([]);
    expect(streamPiecesOf('  lead\u00a0nbsp\ttab\n', 3)).toEqual(['  ', 'lead\u00a0', 'nbsp\ttab\n']);
  });

  it('cuts as the words a regex finds, joined back in even runs, would (any text, any count)', () => {
    const byWords = (content: string, pieces: number): string[] => {
      const words = content.match(/\S+\s*|\s+/g) ?? [];
      if (words.length === 0) return content === '' ? [] : [content];
      const count = Math.max(1, Math.min(pieces, words.length));
      return Array.from({ length: count }, (_, i) =>
        words
          .slice(Math.floor((i * words.length) / count), Math.floor(((i + 1) * words.length) / count))
          .join(''),
      );
    };
    const text = fc.oneof(
      fc.string(),
      fc.string({ unit: 'binary' }),
      fc
        .array(
          fc.constantFrom(
            'a',
            'bc',
            ' ',
            '\n',
            '\t',
            '\u00a0',
            '\u2028',
            '\ufeff',
            '\ud83d\ude00',
            'x\u3000',
          ),
          { maxLength: 40 },
        )
        .map((parts) => parts.join('')),
    );
    fc.assert(
      fc.property(text, fc.integer({ min: 1, max: 30 }), (content, pieces) => {
        const cut = streamPiecesOf(content, pieces);
        expect(cut).toEqual(byWords(content, pieces));
        expect(cut.join('')).toBe(content);
      }),
      { numRuns: 500 },
    );
  });
});
