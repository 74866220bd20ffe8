import { ConfigError, loadConfig } from './config';
import { parseProviderLimits } from './provider-limits';

describe('parseProviderLimits', () => {
  it('means no limits when unset or blank', () => {
    expect(parseProviderLimits(undefined)).toEqual({ providers: {}, models: {} });
    expect(parseProviderLimits('  ')).toEqual({ providers: {}, models: {} });
    expect(parseProviderLimits('{}')).toEqual({ providers: {}, models: {} });
  });

  it('splits providers (no slash) from model ids (with a slash)', () => {
    const limits = parseProviderLimits(
      JSON.stringify({
        openrouter: { maxConcurrent: 64, rpm: 1200 },
        simulated: { maxConcurrent: 100 },
        'openai-compatible': {},
        'openai/gpt-4o': { rpm: 60 },
        'sim/athena:delay50': { maxConcurrent: 1 },
      }),
    );
    expect(limits).toEqual({
      providers: {
        openrouter: { maxConcurrent: 64, rpm: 1200 },
        simulated: { maxConcurrent: 100 },
        'openai-compatible': {},
      },
      models: { 'openai/gpt-4o': { rpm: 60 }, 'sim/athena:delay50': { maxConcurrent: 1 } },
    });
  });

  it('is what loadConfig exposes as providerLimits', () => {
    expect(loadConfig({}).providerLimits).toEqual({ providers: {}, models: {} });
    expect(loadConfig({ PROVIDER_LIMITS: '{"openrouter":{"rpm":5}}' }).providerLimits).toEqual({
      providers: { openrouter: { rpm: 5 } },
      models: {},
    });
    expect(() => loadConfig({ PROVIDER_LIMITS: '{"openrouter":{"rpm":0}}' })).toThrow(ConfigError);
  });

  it.each([
    ['not json', /PROVIDER_LIMITS is not valid JSON/],
    ['[1,2]', /PROVIDER_LIMITS must be a JSON object/],
    ['"openrouter"', /PROVIDER_LIMITS must be a JSON object/],
    ['null', /PROVIDER_LIMITS must be a JSON object/],
    ['{"sim":{"maxConcurrent":1}}', /PROVIDER_LIMITS: unknown provider "sim" \(providers are openrouter/],
    ['{"openai":{"rpm":1}}', /unknown provider "openai"/],
    ['{"/gpt":{"rpm":1}}', /PROVIDER_LIMITS: "\/gpt" is not a provider\/name model id/],
    ['{"openai/":{"rpm":1}}', /"openai\/" is not a provider\/name model id/],
    ['{"openrouter":5}', /PROVIDER_LIMITS\["openrouter"\] must be an object/],
    ['{"openrouter":[]}', /PROVIDER_LIMITS\["openrouter"\] must be an object/],
    ['{"openrouter":{"rate":5}}', /PROVIDER_LIMITS\["openrouter"\]: unknown field "rate"/],
    ['{"openrouter":{"rpm":0}}', /PROVIDER_LIMITS\["openrouter"\]\.rpm must be a positive integer, got 0/],
    ['{"openrouter":{"rpm":-3}}', /\.rpm must be a positive integer, got -3/],
    ['{"openrouter":{"rpm":1.5}}', /\.rpm must be a positive integer, got 1.5/],
    ['{"openrouter":{"rpm":"60"}}', /\.rpm must be a positive integer, got "60"/],
    ['{"a/b":{"maxConcurrent":null}}', /PROVIDER_LIMITS\["a\/b"\]\.maxConcurrent must be a positive integer/],
  ])('refuses %s', (raw, message) => {
    expect(() => parseProviderLimits(raw)).toThrow(ConfigError);
    expect(() => parseProviderLimits(raw)).toThrow(message);
  });
});
