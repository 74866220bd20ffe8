import {
  FleetLease,
  FleetLimiter,
  hasProviderLimits,
  LimitedProvider,
  LimitScope,
  limitsCover,
  ProviderLimits,
} from './fleet-limits';
import { providerFromEnv } from './openai-compatible.provider';
import { Completion, CompletionRequest, ModelCallError, ModelProvider } from './provider';
import { abortableSleep, RetryingProvider } from './retry';
import { sleep } from '../../../test/support/wait';

const OK: Completion = { content: 'hi', servedModel: 'm', usage: null, simulated: false };

/** In-memory stand-in for the fleet: one concurrency cap, cool-downs, and a log of what happened. */
class FakeLimiter implements FleetLimiter {
  inFlight = 0;
  maxInFlight = 0;
  coolUntil = 0;
  readonly log: string[] = [];
  private next = 0;
  private readonly waiters: Array<() => void> = [];
  failRelease = false;
  failPenalize = false;

  constructor(private readonly maxConcurrent = Infinity) {}

  async acquire(scope: LimitScope, signal: AbortSignal): Promise<FleetLease> {
    this.log.push(`acquire ${scope.provider} ${scope.model ?? '-'}`);
    for (;;) {
      const cooling = this.coolUntil - Date.now();
      if (cooling > 0) {
        await abortableSleep(cooling, signal);
        continue;
      }
      if (this.inFlight < this.maxConcurrent) break;
      await new Promise<void>((resolve) => this.waiters.push(resolve));
    }
    this.inFlight++;
    this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
    return { id: `lease-${this.next++}` };
  }

  async release(lease: FleetLease): Promise<void> {
    this.log.push(`release ${lease.id}`);
    this.inFlight--;
    this.waiters.shift()?.();
    if (this.failRelease) throw new Error('redis down');
  }

  async penalize(provider: string, ms: number): Promise<void> {
    this.log.push(`penalize ${provider} ${ms}`);
    this.coolUntil = Math.max(this.coolUntil, Date.now() + ms);
    if (this.failPenalize) throw new Error('redis down');
  }
}

class ScriptedProvider implements ModelProvider {
  readonly name = 'scripted';
  calls = 0;
  readonly callTimes: number[] = [];
  constructor(
    private readonly outcomes: Array<Completion | Error>,
    private readonly latencyMs = 0,
  ) {}

  async complete(): Promise<Completion> {
    const outcome = this.outcomes[Math.min(this.calls, this.outcomes.length - 1)];
    this.calls++;
    this.callTimes.push(Date.now());
    if (this.latencyMs) await sleep(this.latencyMs);
    if (outcome instanceof Error) throw outcome;
    return outcome;
  }
}

const http = (status: number, retryAfterMs?: number): ModelCallError =>
  new ModelCallError(`HTTP ${status}`, 'http', status === 429 || status >= 500, status, retryAfterMs);

const request = (
  signal: AbortSignal = new AbortController().signal,
  model = 'openai/gpt-4o',
): CompletionRequest => ({
  model,
  messages: [{ role: 'user', content: 'q' }],
  signal,
});

describe('LimitedProvider', () => {
  it('acquires for the provider and model before the call and releases after it', async () => {
    const limiter = new FakeLimiter();
    const inner = new ScriptedProvider([OK]);
    const provider = new LimitedProvider(inner, limiter, { provider: 'openrouter' });
    expect(provider.name).toBe('scripted');
    await expect(provider.complete(request())).resolves.toBe(OK);
    expect(limiter.log).toEqual(['acquire openrouter openai/gpt-4o', 'release lease-0']);
    expect(limiter.inFlight).toBe(0);
  });

  it('releases after a failure and passes the error on untouched', async () => {
    const limiter = new FakeLimiter();
    const error = http(500);
    const provider = new LimitedProvider(new ScriptedProvider([error]), limiter, { provider: 'openrouter' });
    await expect(provider.complete(request())).rejects.toBe(error);
    expect(limiter.log).toEqual(['acquire openrouter openai/gpt-4o', 'release lease-0']);
  });

  it('starts a fleet cool-down on a 429 (Retry-After, or the default), before freeing the slot', async () => {
    const limiter = new FakeLimiter();
    const provider = new LimitedProvider(new ScriptedProvider([http(429, 2500), http(429)]), limiter, {
      provider: 'openai-compatible',
      defaultPenaltyMs: 700,
    });
    await expect(provider.complete(request())).rejects.toMatchObject({ status: 429 });
    limiter.coolUntil = 0;
    await expect(provider.complete(request())).rejects.toMatchObject({ status: 429 });
    expect(limiter.log).toEqual([
      'acquire openai-compatible openai/gpt-4o',
      'penalize openai-compatible 2500',
      'release lease-0',
      'acquire openai-compatible openai/gpt-4o',
      'penalize openai-compatible 700',
      'release lease-1',
    ]);
  });

  it('also treats a 429 reported in a 200 body as a rate limit, and clips a far-off Retry-After', async () => {
    const limiter = new FakeLimiter();
    const inBody = new ModelCallError('Error in response body (code 429)', 'invalid-response', true, 429);
    const farOff = http(429, 3_600_000);
    const provider = new LimitedProvider(new ScriptedProvider([inBody, farOff]), limiter, {
      provider: 'openrouter',
      maxPenaltyMs: 30_000,
    });
    await expect(provider.complete(request())).rejects.toBe(inBody);
    limiter.coolUntil = 0;
    await expect(provider.complete(request())).rejects.toBe(farOff);
    expect(limiter.log.filter((l) => l.startsWith('penalize'))).toEqual([
      'penalize openrouter 1000',
      'penalize openrouter 30000',
    ]);
  });

  it('does not penalize other errors', async () => {
    const limiter = new FakeLimiter();
    const provider = new LimitedProvider(
      new ScriptedProvider([http(503, 5000), http(400), new Error('bug')]),
      limiter,
      { provider: 'openrouter' },
    );
    for (let i = 0; i < 3; i++) await expect(provider.complete(request())).rejects.toBeDefined();
    expect(limiter.log.some((l) => l.startsWith('penalize'))).toBe(false);
    expect(limiter.inFlight).toBe(0);
  });

  it('never fails a call because releasing or penalizing failed', async () => {
    const limiter = new FakeLimiter();
    limiter.failRelease = true;
    limiter.failPenalize = true;
    const provider = new LimitedProvider(new ScriptedProvider([OK, http(429, 10)]), limiter, {
      provider: 'openrouter',
    });
    await expect(provider.complete(request())).resolves.toBe(OK);
    await expect(provider.complete(request())).rejects.toMatchObject({ status: 429 });
  });

  it('does not call the provider when the wait for a slot is aborted', async () => {
    const limiter = new FakeLimiter();
    limiter.coolUntil = Date.now() + 10_000;
    const inner = new ScriptedProvider([OK]);
    const provider = new LimitedProvider(inner, limiter, { provider: 'openrouter' });
    const controller = new AbortController();
    const started = Date.now();
    setTimeout(() => controller.abort(), 30);
    await expect(provider.complete(request(controller.signal))).rejects.toMatchObject({
      name: 'ModelCallError',
      kind: 'aborted',
    });
    expect(Date.now() - started).toBeLessThan(1000);
    expect(inner.calls).toBe(0);
    await expect(provider.complete(request(controller.signal))).rejects.toMatchObject({ kind: 'aborted' });
  });

  it('under RetryingProvider: every attempt waits for the cool-down and holds no slot while backing off', async () => {
    const limiter = new FakeLimiter(1);
    const inner = new ScriptedProvider([http(429, 150), OK], 5);
    const provider = new RetryingProvider(new LimitedProvider(inner, limiter, { provider: 'openrouter' }), {
      // Retry at once: only the fleet cool-down can hold the second attempt back.
      sleep: async () => undefined,
      policy: { baseDelayMs: 0 },
    });
    await expect(provider.complete(request())).resolves.toBe(OK);
    expect(inner.calls).toBe(2);
    expect(inner.callTimes[1] - inner.callTimes[0]).toBeGreaterThanOrEqual(140);
    expect(limiter.log.filter((l) => l.startsWith('acquire'))).toHaveLength(2);
    expect(limiter.inFlight).toBe(0);
  });

  it('keeps concurrent calls within what the limiter admits', async () => {
    const limiter = new FakeLimiter(3);
    const inner = new ScriptedProvider([OK], 10);
    const provider = new LimitedProvider(inner, limiter, { provider: 'simulated' });
    await Promise.all(Array.from({ length: 12 }, () => provider.complete(request())));
    expect(inner.calls).toBe(12);
    expect(limiter.maxInFlight).toBe(3);
    expect(limiter.inFlight).toBe(0);
  });
});

describe('limitsCover', () => {
  const limits: ProviderLimits = {
    providers: { openrouter: { rpm: 10 } },
    models: { 'sim/athena': { maxConcurrent: 1 } },
  };

  it('covers a provider with its own entry or a model entry routed to it', () => {
    expect(limitsCover(limits, 'openrouter')).toBe(true);
    expect(limitsCover(limits, 'simulated')).toBe(true);
    expect(limitsCover(limits, 'openai-compatible')).toBe(false);
    expect(limitsCover({ providers: {}, models: { 'openai/gpt-4o': { rpm: 1 } } }, 'openai-compatible')).toBe(
      true,
    );
    expect(limitsCover({ providers: {}, models: { 'openai/gpt-4o': { rpm: 1 } } }, 'simulated')).toBe(false);
  });

  it('counts every model entry for a provider that answers every model', () => {
    const modelOnly: ProviderLimits = { providers: {}, models: { 'openai/gpt-4o': { rpm: 1 } } };
    expect(limitsCover(modelOnly, 'simulated', { everyModel: true })).toBe(true);
    expect(
      limitsCover({ providers: { openrouter: {} }, models: {} }, 'simulated', { everyModel: true }),
    ).toBe(false);
  });

  it('ignores inherited keys', () => {
    expect(limitsCover({ providers: {}, models: {} }, 'constructor')).toBe(false);
    expect(hasProviderLimits({ providers: {}, models: {} })).toBe(false);
    expect(hasProviderLimits(limits)).toBe(true);
  });
});

describe('providerFromEnv with a wrapper', () => {
  it('names the provider by its PROVIDER_LIMITS key and puts the wrapper under the retry policy', async () => {
    const keys: string[] = [];
    const inner = new ScriptedProvider([http(503), http(503), OK]);
    const wrap = (_provider: ModelProvider, key: string): ModelProvider => {
      keys.push(key);
      return inner;
    };
    const compat = providerFromEnv(
      { OPENAI_BASE_URL: 'http://127.0.0.1:9/v1', LLM_RETRY_BASE_MS: '0' },
      { wrap },
    );
    await expect(compat?.complete(request())).resolves.toBe(OK);
    expect(inner.calls).toBe(3); // every attempt went through the wrapper
    providerFromEnv({ OPENROUTER_API_KEY: 'k' }, { wrap });
    expect(providerFromEnv({}, { wrap })).toBeNull();
    expect(keys).toEqual(['openai-compatible', 'openrouter']);
  });
});
