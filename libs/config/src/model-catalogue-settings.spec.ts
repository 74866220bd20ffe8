import { ConfigError, loadConfig, OPENROUTER_DEFAULT_BASE_URL } from './config';

describe('modelCatalogue settings (GET /api/models)', () => {
  it('has no remote source and hourly refreshes by default', () => {
    expect(loadConfig({}).modelCatalogue).toEqual({
      openrouter: null,
      openaiCompatible: null,
      refreshMs: 3_600_000,
      timeoutMs: 10_000,
    });
  });

  it('reads the settings the provider reads, OpenRouter at its public address unless told otherwise', () => {
    expect(loadConfig({ OPENROUTER_API_KEY: 'sk-or' }).modelCatalogue.openrouter).toEqual({
      apiKey: 'sk-or',
      baseUrl: OPENROUTER_DEFAULT_BASE_URL,
    });
    expect(OPENROUTER_DEFAULT_BASE_URL).toBe('https://openrouter.ai/api/v1');
    const config = loadConfig({
      OPENROUTER_API_KEY: 'sk-or',
      OPENROUTER_BASE_URL: 'http://127.0.0.1:9999/api/v1',
      OPENAI_BASE_URL: 'http://localhost:11434/v1',
      OPENAI_MODEL_PREFIX: 'ollama',
      MODEL_CATALOGUE_REFRESH_MS: '60000',
      MODEL_CATALOGUE_TIMEOUT_MS: '2500',
    }).modelCatalogue;
    expect(config).toEqual({
      openrouter: { apiKey: 'sk-or', baseUrl: 'http://127.0.0.1:9999/api/v1' },
      openaiCompatible: { baseUrl: 'http://localhost:11434/v1', apiKey: 'not-needed', modelPrefix: 'ollama' },
      refreshMs: 60_000,
      timeoutMs: 2500,
    });
    expect(loadConfig({ OPENAI_BASE_URL: 'http://h/v1' }).modelCatalogue.openaiCompatible?.modelPrefix).toBe(
      'local',
    );
  });

  it('refuses intervals that are not integers of at least 100 ms', () => {
    expect(() => loadConfig({ MODEL_CATALOGUE_REFRESH_MS: '50' })).toThrow(ConfigError);
    expect(() => loadConfig({ MODEL_CATALOGUE_TIMEOUT_MS: 'soon' })).toThrow(/MODEL_CATALOGUE_TIMEOUT_MS/);
  });
});
