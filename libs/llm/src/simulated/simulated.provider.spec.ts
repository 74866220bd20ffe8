import { ModelCallError } from '../provider';
import { parseSimModel } from './directives';
import { SimulatedProvider, jitteredLatency, type SimulatedResponder } from './simulated.provider';

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

  it('parses directives', () => {
    expect(parseSimModel('sim/hermes:delay250@answer:rank3:fail@synthesis')).toEqual({
      persona: 'hermes',
      faults: [{ fault: 'fail', kind: 'synthesis' }],
      delays: [{ ms: 250, kind: 'answer' }],
      flags: ['rank3'],
    });
  });
});
