import { ConfigError, loadConfig } from './config';

describe('loadConfig', () => {
  it('defaults to the simulated roster with API keys required', () => {
    const config = loadConfig({});
    expect(config.authMode).toBe('apikey');
    expect(config.realProviderConfigured).toBe(false);
    expect(config.defaults.council.councilModels.every((m) => m.startsWith('sim/'))).toBe(true);
  });

  it('switches defaults when a real provider is configured', () => {
    const config = loadConfig({ OPENROUTER_API_KEY: 'k' });
    expect(config.realProviderConfigured).toBe(true);
    expect(config.defaults.council.councilModels.some((m) => m.startsWith('sim/'))).toBe(false);
  });

  it('reads the default roster from the environment', () => {
    const config = loadConfig({ DEFAULT_COUNCIL_MODELS: 'a/b, c/d', DEFAULT_CHAIRMAN_MODEL: 'e/f' });
    expect(config.defaults.council).toEqual({ councilModels: ['a/b', 'c/d'], chairmanModel: 'e/f' });
  });

  it('refuses default rosters a request would be refused for', () => {
    expect(() => loadConfig({ DEFAULT_COUNCIL_MODELS: 'a/b' })).toThrow(
      /DEFAULT_COUNCIL_MODELS must name 2 to 6/,
    );
    expect(() => loadConfig({ DEFAULT_JURY_MODELS: 'a/b,c/d' })).toThrow(/DEFAULT_JURY_MODELS/);
    expect(() => loadConfig({ DEFAULT_JURY_MODELS: 'a/b,c/d,e/f', DEFAULT_JURY_FOREMAN: 'c/d' })).toThrow(
      /DEFAULT_JURY_FOREMAN \(c\/d\) must not be one of DEFAULT_JURY_MODELS/,
    );
    expect(() => loadConfig({ DEFAULT_DELPHI_FACILITATOR: 'openai/o3' })).toThrow(
      /DEFAULT_DELPHI_FACILITATOR/,
    );
    expect(() => loadConfig({ DEFAULT_CHAIRMAN_MODEL: 'nope' })).toThrow(/DEFAULT_CHAIRMAN_MODEL/);
  });

  it('refuses bad values with a message naming the variable', () => {
    expect(() => loadConfig({ PORT: 'abc' })).toThrow(/PORT/);
    expect(() => loadConfig({ AUTH_MODE: 'open' })).toThrow(ConfigError);
    expect(() => loadConfig({ AUTH_MODE: 'none', NODE_ENV: 'production' })).toThrow(/production/);
  });

  it('sizes the worker pool from its concurrency unless WORKER_DB_POOL says otherwise', () => {
    expect(loadConfig({}).worker.dbPoolSize).toBe(16);
    expect(loadConfig({ WORKER_CONCURRENCY: '2' }).worker.dbPoolSize).toBe(5);
    expect(loadConfig({ WORKER_CONCURRENCY: '2000' }).worker.dbPoolSize).toBe(20);
    expect(loadConfig({ WORKER_CONCURRENCY: '2000', WORKER_DB_POOL: '64' }).worker.dbPoolSize).toBe(64);
    expect(() => loadConfig({ WORKER_DB_POOL: '0' })).toThrow(/WORKER_DB_POOL/);
  });

  it('reads the simulated latency jitter as a fraction from 0 to 1', () => {
    expect(loadConfig({}).simulator.latencyJitter).toBe(0.5);
    expect(loadConfig({ SIM_LATENCY_JITTER: '0' }).simulator.latencyJitter).toBe(0);
    expect(() => loadConfig({ SIM_LATENCY_JITTER: '1.5' })).toThrow(
      /SIM_LATENCY_JITTER must be a number from 0 to 1/,
    );
    expect(() => loadConfig({ SIM_LATENCY_JITTER: 'lots' })).toThrow(/SIM_LATENCY_JITTER/);
  });

  it('reads the /v1 retry grace: 0 (cancel at once), or from a second to an hour', () => {
    expect(loadConfig({}).v1.retryGraceMs).toBe(120_000);
    expect(loadConfig({ V1_RETRY_GRACE_MS: '0' }).v1.retryGraceMs).toBe(0);
    expect(loadConfig({ V1_RETRY_GRACE_MS: '1500' }).v1.retryGraceMs).toBe(1500);
    for (const bad of ['-1', '999', '2500.5', 'soon', '3600001']) {
      expect(() => loadConfig({ V1_RETRY_GRACE_MS: bad })).toThrow(
        /V1_RETRY_GRACE_MS must be 0 or an integer from 1000 to 3600000, got/,
      );
    }
  });

  it('reads how many pieces a streamed simulated answer is written in', () => {
    expect(loadConfig({}).simulator.streamPieces).toBe(20);
    expect(loadConfig({ SIM_STREAM_PIECES: '3' }).simulator.streamPieces).toBe(3);
    expect(() => loadConfig({ SIM_STREAM_PIECES: '0' })).toThrow(/SIM_STREAM_PIECES must be an integer >= 1/);
  });
});
