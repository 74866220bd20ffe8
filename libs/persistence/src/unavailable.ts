const UNAVAILABLE_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  '57P01',
  '57P03',
]);

/** PostgreSQL or Redis could not be reached: worth waiting for, not a bug to report. */
export function isStoreUnavailable(error: unknown): boolean {
  const e = error as { code?: unknown; name?: unknown; message?: unknown; driverError?: unknown };
  if (typeof e?.code === 'string' && (UNAVAILABLE_CODES.has(e.code) || e.code.startsWith('08'))) return true;
  if (e?.name === 'MaxRetriesPerRequestError') return true;
  // TypeORM releases a transaction's query runner when its connection dies (a server shut down
  // mid-transaction); the transaction's next query then fails with one of these.
  if (e?.name === 'QueryRunnerAlreadyReleasedError' || e?.name === 'QueryRunnerProviderAlreadyReleasedError')
    return true;
  const message = typeof e?.message === 'string' ? e.message : '';
  // pg-pool's "timeout exceeded when trying to connect": no connection within
  // DATABASE_CONNECT_TIMEOUT_MS (a server that does not answer, or every connection busy).
  if (
    /Connection terminated|connection timeout|timeout exceeded when trying to connect|Connection is closed|Stream isn't writeable|enableOfflineQueue|the database system is (starting up|shutting down)/i.test(
      message,
    )
  )
    return true;
  return e?.driverError !== undefined && e.driverError !== error && isStoreUnavailable(e.driverError);
}
