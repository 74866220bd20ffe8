import { ModelCallError, type Completion, type CompletionRequest, type ModelProvider } from '@conclave/llm';
import { MAX_MODEL_LABELS, Metrics } from './metrics';
import { ObservedProvider } from './observed.provider';

/** Answers, fails or retries by the model's number, like a busy day of user traffic would. */
class TrafficProvider implements ModelProvider {
  readonly name = 'traffic';
  async complete(request: CompletionRequest): Promise<Completion> {
    const n = Number(request.model.split('-').pop());
    if (n % 3 === 1) throw new ModelCallError('HTTP 503 from somewhere', 'http', true, 503);
    if (n % 3 === 2)
      await request.onRetry?.({ attempt: 1, delayMs: 0, reason: 'HTTP 429', detail: 'HTTP 429' });
    return {
      content: 'ok',
      servedModel: request.model,
      usage: { promptTokens: 10, completionTokens: 5, costUsd: 0.001 },
      simulated: false,
    };
  }
}

/** Series of the model-call metrics, one line each in the exposition. */
async function modelSeries(metrics: Metrics): Promise<string[]> {
  const { body } = await metrics.exposition();
  return body
    .split('\n')
    .filter((line) => /^conclave_(model_call|tokens|cost)/.test(line) && !line.startsWith('#'));
}

async function traffic(
  metrics: Metrics,
  models: string[],
  providerOf: (model: string) => string,
): Promise<void> {
  const observed = new ObservedProvider(new TrafficProvider(), metrics, providerOf);
  for (const model of models) {
    await observed
      .complete({ model, messages: [{ role: 'user', content: 'hi' }], signal: new AbortController().signal })
      .catch(() => undefined);
  }
}

const userModels = (count: number, prefix = 'user/secret-model') =>
  Array.from({ length: count }, (_, i) => `${prefix}-${i}`);

describe('metric labels from user input are bounded', () => {
  it('1 000 distinct model ids and provider names make no more series than 3 do', async () => {
    const few = new Metrics('worker', { models: ['openai/gpt-4o'] });
    await traffic(few, userModels(3), () => 'openai-compatible');
    const many = new Metrics('worker', { models: ['openai/gpt-4o'] });
    // Half of them reported under a provider name that is not one of the known keys.
    await traffic(many, userModels(1000), (model) =>
      Number(model.split('-').pop()) % 2 ? `10.0.0.${model.length}:8000` : 'openai-compatible',
    );

    const series = await modelSeries(many);
    expect(series.length).toBeGreaterThan(0);
    // Every label combination there is: providers (2 seen) x outcomes, kinds, directions; one model value.
    expect(series.length).toBeLessThanOrEqual(2 * (2 * (12 + 3) + 1 + 1 + 2 + 1));
    expect(series.filter((line) => !line.includes('provider="other"')).length).toBe(
      (await modelSeries(few)).length,
    );
    const body = series.join('\n');
    expect(body).not.toContain('secret-model');
    expect(body).not.toContain('10.0.0.');
    expect(body).toContain('model="other"');
    expect(body).toContain('provider="other"');
  });

  it('gives the models named in the configuration their own label, and only them', async () => {
    const metrics = new Metrics('worker', { models: ['openai/gpt-4o', 'sim/athena'] });
    await traffic(metrics, ['openai/gpt-4o-0', 'sim/athena', 'user/unknown-3'], (model) =>
      model.startsWith('sim/') ? 'simulated' : 'openrouter',
    );
    const series = await modelSeries(metrics);
    const counted = (labels: string) =>
      series.some(
        (line) => line.startsWith('conclave_model_call_duration_seconds_count{') && line.includes(labels),
      );
    expect(counted('provider="simulated",model="sim/athena",outcome="ok"')).toBe(true);
    expect(counted('provider="openrouter",model="other",outcome="ok"')).toBe(true);
    const body = series.join('\n');
    expect(body).not.toContain('gpt-4o-0');
    expect(body).not.toContain('unknown-3');
  });

  it(`keeps at most ${MAX_MODEL_LABELS} configured models, the first ones named`, async () => {
    const configured = userModels(1000, 'operator/model');
    const metrics = new Metrics('worker', { models: configured });
    await traffic(metrics, configured, () => 'openrouter');
    const models = new Set((await modelSeries(metrics)).map((line) => /model="([^"]*)"/.exec(line)?.[1]));
    expect(models.size).toBe(MAX_MODEL_LABELS + 1);
    expect(models).toContain('operator/model-0');
    expect(models).toContain(`operator/model-${MAX_MODEL_LABELS - 1}`);
    expect(models).not.toContain(`operator/model-${MAX_MODEL_LABELS}`);
    expect(models).toContain('other');
  });

  it('takes mode and stage labels from closed sets', () => {
    const metrics = new Metrics('worker');
    expect(metrics.modeLabel('council')).toBe('council');
    expect(metrics.modeLabel('unknown')).toBe('unknown');
    expect(metrics.modeLabel('council<script>')).toBe('other');
    expect(metrics.stageLabel('stage1')).toBe('stage1');
    expect(metrics.stageLabel('round_17')).toBe('round_n');
    expect(metrics.stageLabel('round_17_user_text')).toBe('other');
    expect(metrics.stageLabel('x'.repeat(10_000))).toBe('other');
    expect(metrics.providerLabel('openai-compatible')).toBe('openai-compatible');
    expect(metrics.providerLabel('127.0.0.1:8000')).toBe('other');
  });
});
