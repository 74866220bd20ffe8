/// <reference lib="dom" />
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import type { Browser } from 'playwright-core';
import { TestStack } from './support/harness';
import { PrivatePostgres } from './support/private-postgres';
import { builtWebClient, launchChromium, SHOTS } from './support/web-build';

/**
 * Issue 34: a user pressing Stop while PostgreSQL is away sees that the server is temporarily
 * unavailable and that the stop is being retried, not "Something went wrong"; once PostgreSQL is
 * back the stop goes through without another click. In Chromium, on a PostgreSQL of the test's own.
 */
describe('the web client while storage is briefly away', () => {
  let pg: PrivatePostgres | undefined;
  let stack: TestStack;
  let browser: Browser | undefined;

  beforeAll(async () => {
    mkdirSync(SHOTS, { recursive: true });
    pg = await PrivatePostgres.create();
    const cluster = pg;
    stack = new TestStack((id) => ({
      DATABASE_URL: cluster.url(`conclave_t_${id}`),
      WEB_DIR: builtWebClient(),
      SIM_LATENCY_MS: '5',
      RATE_LIMIT_REQUESTS_PER_MINUTE: '0',
      RATE_LIMIT_DELIBERATIONS_PER_MINUTE: '0',
    }));
    await stack.start();
    browser = await launchChromium();
  }, 120_000);

  afterAll(async () => {
    try {
      await browser?.close();
      if (pg && !(await pg.running())) await pg.start();
      await stack?.stop().catch(() => undefined);
    } finally {
      await pg?.destroy();
    }
  }, 60_000);

  it('Stop says "temporarily unavailable, retrying" and goes through once storage is back', async () => {
    const { messageId } = await stack.deliberate({
      question: 'Will this stop while the database is away?',
      councilModels: ['sim/athena', 'sim/slow:delay60000@answer'],
      chairmanModel: 'sim/chairman',
    });
    const page = await (browser as Browser).newPage({ viewport: { width: 1280, height: 900 } });
    await page.goto(`${stack.baseUrl}/#/m/${messageId}`);
    const stop = page.getByRole('button', { name: 'Stop', exact: true });
    await stop.waitFor({ timeout: 30_000 });

    const cluster = pg as PrivatePostgres;
    await cluster.stop();
    try {
      await stop.click();
      const outcome = page.locator('.stop-outcome');
      await outcome.waitFor({ timeout: 15_000 });
      expect(await outcome.textContent()).toMatch(
        /^The server is temporarily unavailable; retrying in \d+ s…$/,
      );
      expect(await page.getByText(/went wrong/i).count()).toBe(0);
      expect(await page.getByRole('button', { name: 'Stopping…' }).isDisabled()).toBe(true);
      await page.screenshot({ path: path.join(SHOTS, 'stop-while-storage-away.png'), fullPage: true });
    } finally {
      await cluster.start();
    }
    // No second click: the retry stops it.
    await page.getByText(/^Stopped: /).waitFor({ timeout: 45_000 });
    expect(await page.locator('[data-testid="status"]').textContent()).toBe('cancelled');
    const [{ status }]: { status: string }[] = await stack.db.query(
      'SELECT status FROM messages WHERE id = $1',
      [messageId],
    );
    expect(status).toBe('cancelled');
    await page.close();
  }, 120_000);
});
