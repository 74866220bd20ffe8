/// <reference lib="dom" />
import path from 'node:path';
import type { DeliberationView } from '@conclave/contracts';
import type { Page } from 'playwright-core';
import { browserSuite, contrast, SHOTS } from './support/web-build';
import { sleep } from './support/wait';

/**
 * Issue 32 in the web client: a council that went on without a member says so at the top of the
 * turn, naming it and why; a council stopped inside a stage shows the answers that had arrived,
 * and who was cut. Checked in Chromium at desktop and phone width, with screenshots.
 */
describe('degraded and partial runs in the web client', () => {
  const { stack, browser } = browserSuite({ SIM_LATENCY_MS: '5' });

  const open = async (messageId: string, selector: string, viewport: { width: number; height: number }) => {
    const page = await browser().newPage({ viewport });
    await page.goto(`${stack.baseUrl}/#/m/${messageId}`);
    await page.waitForSelector(selector, { timeout: 30_000 });
    return page;
  };
  const top = (page: Page, selector: string) =>
    page
      .locator(selector)
      .first()
      .evaluate((el) => el.getBoundingClientRect().top);
  const fits = (page: Page) => page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth);

  const VIEWPORTS = [
    ['desktop', { width: 1280, height: 900 }],
    ['phone', { width: 390, height: 844 }],
  ] as const;

  it('a complete council with a failed member names it above the answer', async () => {
    const { messageId, events } = await stack.run({
      question: 'Should we ship on Friday?',
      councilModels: ['sim/athena', 'sim/x:fail', 'sim/y'],
      chairmanModel: 'sim/chairman',
    });
    expect(events.at(-1)?.type).toBe('complete');
    for (const [device, viewport] of VIEWPORTS) {
      const page = await open(messageId, '.result.council section[aria-label="synthesis"]', viewport);
      const notice = page.locator('[data-testid="degraded"]');
      await notice.waitFor();
      expect(await notice.textContent()).toContain(
        '2 of 3 answered — sim/x:fail: HTTP 400 from the simulated provider: simulated failure',
      );
      expect(await page.locator('[data-testid="status"]').textContent()).toBe('complete');
      // Near the top: above the synthesis and the answers.
      expect(await top(page, '[data-testid="degraded"]')).toBeLessThan(await top(page, '.result.council'));
      expect(await fits(page)).toBe(true);
      if (device === 'desktop')
        expect((await contrast(page, '[data-testid="degraded"]')).failures).toEqual([]);
      await page.screenshot({ path: path.join(SHOTS, `degraded-council-${device}.png`), fullPage: true });
      await page.close();
    }
  }, 60_000);

  it('a council stopped in stage 1 shows the answer that had arrived and who was cut', async () => {
    const { messageId } = await stack.deliberate({
      question: 'What do we keep when we stop?',
      councilModels: ['sim/athena', 'sim/slow:delay60000@answer'],
      chairmanModel: 'sim/chairman',
    });
    const deadline = Date.now() + 15_000;
    for (;;) {
      const rows = (await stack.db.query(
        `SELECT count(*)::int AS n FROM deliberation_events WHERE message_id = $1 AND type = 'model_progress'
           AND payload->>'state' = 'succeeded'`,
        [messageId],
      )) as { n: number }[];
      if (rows[0].n === 1) break;
      if (Date.now() > deadline) throw new Error('sim/athena did not answer');
      await sleep(25);
    }
    expect((await stack.api('POST', `/api/deliberations/${messageId}/cancel`)).status).toBe(200);
    const view = (await stack.api<DeliberationView>('GET', `/api/deliberations/${messageId}`)).body;
    const kept = view.partial?.answers[0];
    expect(kept?.model).toBe('sim/athena');
    for (const [device, viewport] of VIEWPORTS) {
      const page = await open(messageId, '[data-testid="kept-stage"]', viewport);
      const section = page.locator('[data-testid="kept-stage"]');
      expect(await section.locator('h3').textContent()).toBe('Kept from the unfinished stage stage1');
      expect(await section.locator('.kept-answer .kept-model').textContent()).toBe('sim/athena');
      // The kept answer itself shows whole with its call, once (not again in the kept section).
      const call = page.locator('.call[data-participant="sim/athena"] .call-answer[data-final="yes"]');
      expect(await call.textContent()).toContain('[simulated answer]');
      expect(await page.getByText('[simulated answer]', { exact: false }).count()).toBe(1);
      expect(await section.locator('.kept-cut').textContent()).toContain('sim/slow:delay60000@answer');
      expect(await page.locator('[data-testid="degraded"]').textContent()).toContain(
        '1 of 2 answered — sim/slow:delay60000@answer: cancelled: the deliberation was stopped',
      );
      expect(await page.locator('[data-testid="status"]').textContent()).toBe('cancelled');
      expect(await fits(page)).toBe(true);
      if (device === 'desktop')
        expect((await contrast(page, '[data-testid="kept-stage"]')).failures).toEqual([]);
      await page.screenshot({ path: path.join(SHOTS, `partial-council-${device}.png`), fullPage: true });
      await page.close();
    }
  }, 60_000);
});
