/**
 * Set-up of the unit and web tiers (jest.config.js): they run without services. A test that
 * connects to PostgreSQL (port 5432) or Redis (port 6379) fails at once with the reason: it
 * belongs in the db tier (`*.db-spec.ts`) or the e2e tier (`*.e2e-spec.ts`).
 *
 * The guard patches `net.Socket.prototype.connect`, which every PostgreSQL and Redis client goes
 * through. Jest's worker processes run files of every tier one after another, so the patch is
 * installed once per process and consults a switch that each tier's set-up turns on or off
 * (test/support/services.ts turns it off for the db and e2e tiers). The switch lives on the `net`
 * module itself: core modules are shared by every test file of a worker process, while each file
 * gets a `process` object of its own (a switch kept there stayed on for the files that followed).
 */
import net from 'node:net';
import { noServicesGuard } from './services-guard';

const SERVICES: Record<number, string> = { 5432: 'PostgreSQL', 6379: 'Redis' };

/** The port a `socket.connect(...)` call asks for, or null (a Unix socket path). */
function portOf(args: unknown[]): number | null {
  const [first] = args;
  const options = Array.isArray(first) ? first[0] : first;
  if (typeof options === 'number') return options;
  if (typeof options === 'string') return /^\d+$/.test(options) ? Number(options) : null;
  if (options && typeof options === 'object' && 'port' in options) return Number(options.port);
  return null;
}

const guard = noServicesGuard();
if (!guard.installed) {
  guard.installed = true;
  const connect = net.Socket.prototype.connect as (...args: unknown[]) => net.Socket;
  net.Socket.prototype.connect = function guardedConnect(this: net.Socket, ...args: unknown[]) {
    const port = portOf(args);
    if (guard.on && port !== null && SERVICES[port]) {
      const message =
        `a unit or web test connected to ${SERVICES[port]} (port ${port}); these tiers run without ` +
        'services: move the test to a *.db-spec.ts file (db tier) or an *.e2e-spec.ts file (e2e tier)';
      guard.violations.push(message);
      throw new Error(message);
    }
    return connect.apply(this, args);
  } as typeof net.Socket.prototype.connect;
}

guard.on = true;
guard.violations = [];

// A client may swallow the thrown error and retry: the test still fails, with the reason.
afterEach(() => {
  const [first] = guard.violations;
  guard.violations = [];
  if (first) throw new Error(first);
});
