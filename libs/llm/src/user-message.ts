import { isNetworkErrorCode } from './network-errors';
import { FAILURE_REASONS, ModelCallError } from './provider';

/** The providers users may be told about, by key; any other name (a host, say) is "the provider". */
const KNOWN_PROVIDERS: ReadonlySet<string> = new Set(['openrouter', 'openai-compatible', 'simulated']);
const REASONS: ReadonlySet<string> = new Set(FAILURE_REASONS);

const isHttpStatus = (status: number | undefined): status is number =>
  Number.isInteger(status) && (status as number) >= 100 && (status as number) <= 599;

/**
 * What a user is told about a failed model call (model_progress and error events, stored errors,
 * the result endpoint): the provider's key and the failure kind, e.g. "HTTP 503 from the
 * openai-compatible provider". Built only from closed lists (kind, status, reason, network code,
 * known provider keys) and never from the error's message, so no host, URL, path, credential or
 * text of the provider's own can reach users; the message, with all that detail, is for logs.
 */
export function userFacingCallError(error: unknown): string {
  if (!(error instanceof ModelCallError)) return 'unexpected provider error';
  const who =
    error.provider !== undefined && KNOWN_PROVIDERS.has(error.provider)
      ? `the ${error.provider} provider`
      : 'the provider';
  const reason = error.reason !== undefined && REASONS.has(error.reason) ? error.reason : undefined;
  const code = isNetworkErrorCode(error.code) ? error.code : undefined;
  switch (error.kind) {
    case 'timeout':
      return reason === 'connection timed out' ? `Connection to ${who} timed out` : 'timed out';
    case 'aborted':
      return 'Model call aborted';
    case 'http': {
      const status = isHttpStatus(error.status) ? `HTTP ${error.status}` : 'HTTP error';
      return `${status} from ${who}${reason === 'simulated failure' ? ': simulated failure' : ''}`;
    }
    case 'network':
      if (!reason) return `Network error calling ${who}`;
      return `Network error calling ${who}: ${reason}${code ? ` (${code})` : ''}`;
    case 'invalid-response':
      if (reason === 'error in response body') {
        return `Error in response body from ${who}${isHttpStatus(error.status) ? ` (code ${error.status})` : ''}`;
      }
      return `Invalid response from ${who}${reason ? `: ${reason}` : ''}`;
    default:
      return 'unexpected provider error';
  }
}
