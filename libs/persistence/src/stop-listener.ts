import { Client } from 'pg';
import { STOP_CHANNEL } from './sql/stop-notices.function';

/** How long the listener waits before connecting again after a failure, at most. */
const RECONNECT_MAX_MS = 5000;
/** How often the listener's connection is checked with a round trip (a silent network loss). */
const HEARTBEAT_MS = 5000;

/** The listener's connection as pg_stat_activity names it. */
export const STOP_LISTENER_APPLICATION = 'conclave-stop-listener';

export interface StopListenerHandlers {
  /** A deliberation was stored as cancelled (its id). */
  stop(messageId: string): void;
  /** LISTEN is in place: every stop that commits from now on is heard. */
  up(): void;
  /** The connection is gone: stops that commit from now on are missed until `up` again. */
  down(reason: string): void;
}

/**
 * LISTENs on `conclave_stops` (see sql/stop-notices.function.ts) on a connection of its own, not a
 * pooled one (a LISTEN belongs to its session), and connects again after any failure. Each
 * connection is up only once its LISTEN is confirmed; a round trip every HEARTBEAT_MS finds a
 * connection that died without a word. `url` must reach PostgreSQL itself or a session pooler.
 */
export class StopListener {
  private client: Client | null = null;
  private heartbeat: NodeJS.Timeout | null = null;
  private retry: NodeJS.Timeout | null = null;
  private closed = false;
  private failures = 0;

  constructor(
    private readonly url: string,
    private readonly handlers: StopListenerHandlers,
  ) {}

  /** Connects; resolves after the first attempt (up or not: it keeps trying on its own). */
  async start(): Promise<void> {
    await this.connect();
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.retry) clearTimeout(this.retry);
    if (this.heartbeat) clearInterval(this.heartbeat);
    const client = this.client;
    this.client = null;
    await client?.end().catch(() => undefined);
  }

  private async connect(): Promise<void> {
    if (this.closed) return;
    const client = new Client({
      connectionString: this.url,
      keepAlive: true,
      application_name: STOP_LISTENER_APPLICATION,
    });
    let failed = false;
    const fail = (error: unknown) => {
      if (failed) return;
      failed = true;
      if (this.client === client) this.client = null;
      if (this.heartbeat) clearInterval(this.heartbeat);
      this.heartbeat = null;
      void client.end().catch(() => undefined);
      if (this.closed) return;
      this.handlers.down(error instanceof Error ? error.message : String(error));
      this.failures += 1;
      const wait = Math.min(250 * 2 ** Math.min(this.failures, 5), RECONNECT_MAX_MS);
      this.retry = setTimeout(() => void this.connect(), wait);
      this.retry.unref();
    };
    client.on('error', fail);
    client.on('end', () => fail(new Error('the connection closed')));
    client.on('notification', (notice) => {
      if (notice.channel === STOP_CHANNEL && notice.payload) this.handlers.stop(notice.payload);
    });
    try {
      await client.connect();
      await client.query(`LISTEN ${STOP_CHANNEL}`);
    } catch (error) {
      fail(error);
      return;
    }
    if (failed || this.closed) {
      await client.end().catch(() => undefined);
      return;
    }
    this.client = client;
    this.failures = 0;
    this.heartbeat = setInterval(() => {
      const probe = client.query('SELECT 1');
      const timeout = setTimeout(() => fail(new Error('no answer to a heartbeat')), HEARTBEAT_MS);
      timeout.unref();
      probe.then(
        () => clearTimeout(timeout),
        (error: unknown) => {
          clearTimeout(timeout);
          fail(error);
        },
      );
    }, HEARTBEAT_MS);
    this.heartbeat.unref();
    this.handlers.up();
  }
}
