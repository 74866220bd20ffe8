import { modelsInDefaults, type ModeDefaults, type ProviderLimits } from '@conclave/contracts';
import { ConfigError } from './errors';

/** Characters of an RFC 6750 bearer token (token68). */
const BEARER_TOKEN = /^[A-Za-z0-9._~+/-]+=*$/;
export const METRICS_TOKEN_MIN_CHARS = 16;

/**
 * METRICS_TOKEN: when set, /metrics on the gateway and the worker answers only requests with
 * `Authorization: Bearer <token>`. Unset or empty: /metrics is open to whoever reaches the port.
 * A malformed token stops the start; the message never repeats the value (it is a secret).
 */
export function parseMetricsToken(raw: string | undefined): string | null {
  const token = raw?.trim() ?? '';
  if (token === '') return null;
  if (token.length < METRICS_TOKEN_MIN_CHARS || !BEARER_TOKEN.test(token)) {
    throw new ConfigError(
      `METRICS_TOKEN must be at least ${METRICS_TOKEN_MIN_CHARS} characters of A-Z a-z 0-9 - . _ ~ + / ` +
        `(a bearer token, e.g. from \`openssl rand -hex 32\`); the value given (${token.length} characters) is not`,
    );
  }
  return token;
}

/**
 * Every model id the operator's configuration names: the default rosters of every mode and the
 * models of PROVIDER_LIMITS, each once, in that order. These are the only ids with a `model`
 * metric label of their own; every other id comes from requests and is counted as `other`.
 */
export function modelsNamedInConfig(config: {
  defaults: ModeDefaults;
  providerLimits: ProviderLimits;
}): string[] {
  return [...new Set([...modelsInDefaults(config.defaults), ...Object.keys(config.providerLimits.models)])];
}
