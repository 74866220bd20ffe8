import net from 'node:net';

/** The unit tiers' connection guard's state, shared by every test file of a jest worker process. */
export interface NoServicesGuard {
  /** Whether the patched `connect` is in place in this process. */
  installed: boolean;
  /** On: connecting to PostgreSQL or Redis fails (unit and web tiers); off: db and e2e tiers. */
  on: boolean;
  violations: string[];
}

const KEY = Symbol.for('conclave.test.noServicesGuard');

/**
 * Kept on the `net` module, which jest shares across the test files of a worker (core modules are
 * not re-evaluated per file), unlike `process`, which each file's environment gets anew.
 */
export function noServicesGuard(): NoServicesGuard {
  const holder = net as unknown as Record<symbol, NoServicesGuard | undefined>;
  return (holder[KEY] ??= { installed: false, on: false, violations: [] });
}
