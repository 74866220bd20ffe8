/// <reference lib="dom" />
import path from 'node:path';
import { browserSuite, contrast, SHOTS } from './support/web-build';

/**
 * Issue 37 in the web client: a graded council shows its grades under the turn — the panel's final
 * verdict first, then ✓ / ✗ / ? per answer with what the grader read. Checked in Chromium at
 * desktop and phone width, with screenshots.
 */
describe('graded answers in the web client', () => {
  const { stack, browser } = browserSuite({ SIM_LATENCY_MS: '5' });

  const VIEWPORTS = [
    ['desktop', { width: 1280, height: 900 }],
    ['phone', { width: 390, height: 844 }],
  ] as const;

  it('a graded council lists every graded answer with its mark, the final verdict first', async () => {
    const { messageId, events } = await stack.run({
      question: 'A crate holds 12 boxes of 14 jars. How many jars are in 3 crates?',
      councilModels: ['sim/right:acc100', 'sim/wrong:acc0', 'sim/unread:malformed'],
      chairmanModel: 'sim/chair:follow',
      expected: 504,
    });
    expect(events.at(-1)?.type).toBe('complete');
    for (const [device, viewport] of VIEWPORTS) {
      const page = await browser().newPage({ viewport });
      await page.goto(`${stack.baseUrl}/#/m/${messageId}`);
      const panel = page.locator('[data-testid="grades"]');
      await panel.waitFor({ timeout: 30_000 });
      const verdicts = await panel
        .locator('li[data-verdict]')
        .evaluateAll((items) => items.map((li) => li.getAttribute('data-verdict')));
      // Three members' answers and the chairman's synthesis; the malformed member's is unreadable.
      expect(verdicts).toHaveLength(4);
      for (const verdict of ['correct', 'incorrect', 'unreadable'])
        expect(verdicts.filter((v) => v === verdict).length).toBeGreaterThanOrEqual(1);
      expect(await panel.locator('.grades-summary').textContent()).toMatch(/The panel.s final answer: .+\./);
      expect(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth)).toBe(true);
      if (device === 'desktop') expect((await contrast(page, '[data-testid="grades"]')).failures).toEqual([]);
      await panel.scrollIntoViewIfNeeded();
      await page.screenshot({ path: path.join(SHOTS, `grades-council-${device}.png`), fullPage: true });
      await page.close();
    }
  }, 90_000);
});
