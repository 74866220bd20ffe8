import { MODEL_ID_PATTERN, type ProviderLimits, type RateLimit } from '@conclave/contracts';
import { ConfigError } from './errors';

export type { ProviderLimits, RateLimit } from '@conclave/contracts';

/**
 * The providers a limit can name: `openrouter` (OPENROUTER_API_KEY), `openai-compatible`
 * (OPENAI_BASE_URL) and `simulated` (every `sim/…` model). Mirrors the keys the worker
 * gives its providers (libs/llm fleet-limits.ts `PROVIDER_KEYS`).
 */
export const LIMITABLE_PROVIDERS = ['openrouter', 'openai-compatible', 'simulated'] as const;

const FIELDS = ['maxConcurrent', 'rpm'] as const;
/** The same shape config.ts accepts for rosters: `provider/name`. */
const EXAMPLE = '{"openrouter":{"maxConcurrent":64,"rpm":1200},"openai/gpt-4o":{"rpm":60}}';

/**
 * Parses `PROVIDER_LIMITS`: a JSON object whose keys are providers (no slash) or model ids
 * (with a slash), each mapped to `{ maxConcurrent?, rpm? }` (positive integers). An empty object
 * for a provider caps nothing but still shares its 429 cool-downs across the fleet.
 * Empty or unset means no limits at all. Anything else throws a ConfigError naming the culprit.
 */
export function parseProviderLimits(raw: string | undefined): ProviderLimits {
  const providers: Record<string, RateLimit> = {};
  const models: Record<string, RateLimit> = {};
  if (raw === undefined || raw.trim() === '') return { providers, models };
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new ConfigError(`PROVIDER_LIMITS is not valid JSON (${reason}); expected e.g. ${EXAMPLE}`);
  }
  if (!isPlainObject(parsed)) {
    throw new ConfigError(`PROVIDER_LIMITS must be a JSON object of provider or model ids, e.g. ${EXAMPLE}`);
  }
  for (const [key, value] of Object.entries(parsed)) {
    const isModel = key.includes('/');
    if (isModel && !MODEL_ID_PATTERN.test(key)) {
      throw new ConfigError(`PROVIDER_LIMITS: "${key}" is not a provider/name model id`);
    }
    if (!isModel && !(LIMITABLE_PROVIDERS as readonly string[]).includes(key)) {
      throw new ConfigError(
        `PROVIDER_LIMITS: unknown provider "${key}" (providers are ${LIMITABLE_PROVIDERS.join(', ')}; ` +
          'model ids contain a slash)',
      );
    }
    (isModel ? models : providers)[key] = parseLimit(key, value);
  }
  return { providers, models };
}

function parseLimit(key: string, value: unknown): RateLimit {
  if (!isPlainObject(value)) {
    throw new ConfigError(
      `PROVIDER_LIMITS["${key}"] must be an object with maxConcurrent and/or rpm, got ${JSON.stringify(value)}`,
    );
  }
  const limit: RateLimit = {};
  for (const [field, n] of Object.entries(value)) {
    if (!(FIELDS as readonly string[]).includes(field)) {
      throw new ConfigError(
        `PROVIDER_LIMITS["${key}"]: unknown field "${field}" (allowed: ${FIELDS.join(', ')})`,
      );
    }
    if (typeof n !== 'number' || !Number.isSafeInteger(n) || n < 1) {
      throw new ConfigError(
        `PROVIDER_LIMITS["${key}"].${field} must be a positive integer, got ${JSON.stringify(n)}`,
      );
    }
    limit[field as keyof RateLimit] = n;
  }
  return limit;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
