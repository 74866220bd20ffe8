import { NETWORK_ERROR_CODES, type FailureReason, type NetworkErrorCode } from './provider';

/*
 * The one table of socket-level failures: which codes count (NETWORK_ERROR_CODES), how each is
 * described to users, and how one is found in an error's cause chain. Model calls and model-list
 * fetches both read it.
 */

const NETWORK_CODES: ReadonlySet<string> = new Set(NETWORK_ERROR_CODES);

export const isNetworkErrorCode = (code: unknown): code is NetworkErrorCode =>
  typeof code === 'string' && NETWORK_CODES.has(code);

/** How each socket-level failure is described to users. */
export const NETWORK_REASONS: Readonly<Record<NetworkErrorCode, FailureReason>> = {
  ECONNREFUSED: 'connection refused',
  ECONNRESET: 'connection reset',
  ECONNABORTED: 'connection lost',
  EPIPE: 'connection lost',
  ETIMEDOUT: 'connection timed out',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
  ENOTFOUND: 'host name not resolved',
  EAI_AGAIN: 'host name not resolved',
  UND_ERR_SOCKET: 'connection lost',
  UND_ERR_CLOSED: 'connection lost',
};

/**
 * The socket-level code (ECONNRESET, ...) somewhere in an error's cause chain (five deep at most).
 * With `terminated`, undici's bare "terminated" (the body stream died with its connection) counts
 * as UND_ERR_SOCKET when no code is found.
 */
export function networkErrorCode(err: unknown, terminated = false): NetworkErrorCode | undefined {
  let sawTerminated = false;
  let current: unknown = err;
  // Duck-typed: fetch's errors come from Node's own realm, not necessarily the caller's (jest).
  for (let depth = 0; depth < 5 && typeof current === 'object' && current !== null; depth++) {
    const { code, name, message, cause } = current as {
      code?: unknown;
      name?: unknown;
      message?: unknown;
      cause?: unknown;
    };
    if (isNetworkErrorCode(code)) return code;
    if (name === 'TypeError' && message === 'terminated') sawTerminated = true;
    current = cause;
  }
  return terminated && sawTerminated ? 'UND_ERR_SOCKET' : undefined;
}
