import { ConfigError, loadConfig } from './config';
import { modelsNamedInConfig } from './metrics-settings';

describe('METRICS_TOKEN', () => {
  const token = 'prom-scrape-0123456789abcdef';

  it('is off unless set', () => {
    expect(loadConfig({}).metricsToken).toBeNull();
    expect(loadConfig({ METRICS_TOKEN: '' }).metricsToken).toBeNull();
    expect(loadConfig({ METRICS_TOKEN: token }).metricsToken).toBe(token);
  });

  it.each([
    ['too short', 'short-token'],
    ['with a space', 'prom scrape 0123456789abcdef'],
    ['with a quote', 'prom"scrape0123456789abcdef'],
    ['with a line break', 'prom-scrape-0123456789\nabcdef'],
  ])('stops the start when %s, naming the variable but not the value', (_label, value) => {
    let error: unknown;
    try {
      loadConfig({ METRICS_TOKEN: value });
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as Error).message).toMatch(/^METRICS_TOKEN must be/);
    expect((error as Error).message).not.toContain(value);
  });
});

describe('modelsNamedInConfig', () => {
  it('lists every default roster and PROVIDER_LIMITS model once, in configuration order', () => {
    const config = loadConfig({
      DEFAULT_COUNCIL_MODELS: 'sim/a,sim/b',
      DEFAULT_CHAIRMAN_MODEL: 'sim/c',
      DEFAULT_VOTE_MODELS: 'sim/a,sim/x,sim/y',
      PROVIDER_LIMITS: '{"openrouter":{"rpm":10},"openai/gpt-4o":{"rpm":5}}',
    });
    const models = modelsNamedInConfig(config);
    expect(models.slice(0, 3)).toEqual(['sim/a', 'sim/b', 'sim/c']);
    expect(models).toEqual(
      expect.arrayContaining(['sim/x', 'sim/y', 'openai/gpt-4o', 'perplexity/sonar-pro']),
    );
    expect(new Set(models).size).toBe(models.length);
    expect(models).not.toContain('openrouter');
  });
});
