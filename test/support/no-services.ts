/**
 * Set-up of the unit and web tiers (jest.config.js): they run without services. A test that
 * connects to PostgreSQL (port 5432) or Redis (port 6379) fails at once with the reason: it
 * belongs in the db tier (`*.db-spec.ts`) or the e2e tier (`*.e2e-spec.ts`).
 *
 * The guard patches `net.Socket.prototype.connect`, which every PostgreSQL and Redis client goes
 * through. Jest's worker processes run files of every tier one after another, so the patch is
 * installed once per process and consults a flag that each tier's set-up sets (test/support/services.ts
 * clears it for the db and e2e tiers).
 */
import net from 'node:net';

const FLAG = Symbol.for('conclave.test.noServices');
const VIOLATIONS = Symbol.for('conclave.test.serviceConnections');
const INSTALLED = Symbol.for('conclave.test.noServicesGuard');
const SERVICES: Record<number, string> = { 5432: 'PostgreSQL', 6379: 'Redis' };

type Guarded = typeof process & { [FLAG]?: boolean; [VIOLATIONS]?: string[]; [INSTALLED]?: boolean };
const guarded = process as Guarded;

/** The port a `socket.connect(...)` call asks for, or null (a Unix socket path). */
function portOf(args: unknown[]): number | null {
  const [first] = args;
  const options = Array.isArray(first) ? first[0] : first;
  if (typeof options === 'number') return options;
  if (typeof options === 'string') return /^\d+$/.test(options) ? Number(options) : null;
  if (options && typeof options === 'object' && 'port' in options) return Number(options.port);
  return null;
}

if (!guarded[INSTALLED]) {
  guarded[INSTALLED] = true;
  const connect = net.Socket.prototype.connect as (...args: unknown[]) => net.Socket;
  net.Socket.prototype.connect = function guardedConnect(this: net.Socket, ...args: unknown[]) {
    const port = portOf(args);
    if (guarded[FLAG] && port !== null && SERVICES[port]) {
      const message =
        `a unit or web test connected to ${SERVICES[port]} (port ${port}); these tiers run without ` +
        'services: move the test to a *.db-spec.ts file (db tier) or an *.e2e-spec.ts file (e2e tier)';
      (guarded[VIOLATIONS] ??= []).push(message);
      throw new Error(message);
    }
    return connect.apply(this, args);
  } as typeof net.Socket.prototype.connect;
}

guarded[FLAG] = true;
guarded[VIOLATIONS] = [];

// A client may swallow the thrown error and retry: the test still fails, with the reason.
afterEach(() => {
  const violations = guarded[VIOLATIONS] ?? [];
  guarded[VIOLATIONS] = [];
  if (violations.length > 0) throw new Error(violations[0]);
});
