/// <reference lib="dom" />
// page.evaluate bodies run in the browser.
import type { DeliberationView, Preset, VoteResult } from '@conclave/contracts';
import path from 'node:path';
import type { Page } from 'playwright-core';
import { browserSuite, SHOTS } from './support/web-build';

/**
 * Presets in the web client (issue 22): save the form's mode, roster and options under a name,
 * then pick it to fill a new form. In a real headless Chromium, at a phone's width, with the
 * keyboard, against a real gateway and worker.
 */

describe('web client: presets', () => {
  const { stack, browser } = browserSuite({ SIM_LATENCY_MS: '20' });

  const overflow = (page: Page) =>
    page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);

  it('saves the panel as a preset with the keyboard, then fills a new form from it, on a phone', async () => {
    const page = await browser().newPage({ viewport: { width: 320, height: 700 }, isMobile: true });
    const errors: string[] = [];
    page.on('pageerror', (error) => errors.push(error.message));
    await page.goto(`${stack.baseUrl}/#/new`);
    await page.check('input[name="mode"][value="vote"]');
    await page.fill('input[name="modeConfig.models"]', 'sim/a:voteA, sim/b:voteA, sim/c:voteB');
    await page.press('input[name="modeConfig.models"]', 'Tab');
    await page.click('details.options > summary');
    await page.fill('input[name="modeConfig.timeoutMs"]', '45000');
    // "Save as preset" opens from the keyboard; Enter in the name saves (and starts nothing).
    await page.focus('details.save-preset > summary');
    await page.keyboard.press('Enter');
    await page.getByLabel('Preset name').fill('Bad Name');
    await page.keyboard.press('Enter');
    await page.waitForSelector('[data-field="presetName"]:has-text("no slashes, spaces or capitals")');
    await page.getByLabel('Preset name').fill('voters');
    await page.keyboard.press('Enter');
    await page.waitForSelector('[role="status"]:has-text("Saved as preset \\"voters\\".")');
    expect(await overflow(page)).toBeLessThanOrEqual(0);
    await page.screenshot({ path: path.join(SHOTS, 'presets-phone.png'), fullPage: true });

    const saved = await stack.api<Preset>('GET', '/api/presets/voters');
    expect(saved.body).toMatchObject({
      name: 'voters',
      mode: 'vote',
      modeConfig: { models: ['sim/a:voteA', 'sim/b:voteA', 'sim/c:voteB'], timeoutMs: 45000 },
    });
    expect(await stack.db.query('SELECT count(*)::int AS n FROM messages')).toEqual([{ n: 0 }]);

    // A fresh form: pick the preset, ask, and the deliberation runs with the preset's panel.
    await page.goto(`${stack.baseUrl}/#/new`);
    await page.reload();
    await page.waitForSelector('select[name="preset"] option[value="voters"]', { state: 'attached' });
    await page.selectOption('select[name="preset"]', 'voters');
    expect(await page.isChecked('input[name="mode"][value="vote"]')).toBe(true);
    await page.fill('textarea[name="question"]', 'Which database should we start with?');
    expect(await overflow(page)).toBeLessThanOrEqual(0);
    await page.click('button[type="submit"]');
    await page.waitForSelector('[data-testid="status"]:text-is("complete")', { timeout: 60_000 });
    const messageId = decodeURIComponent(page.url().split('#/m/')[1] ?? '');
    const view = await stack.api<DeliberationView<VoteResult>>('GET', `/api/deliberations/${messageId}`);
    expect(view.body.mode).toBe('vote');
    expect(view.body.result.stage1.map((r) => r.model).sort()).toEqual([
      'sim/a:voteA',
      'sim/b:voteA',
      'sim/c:voteB',
    ]);
    expect(errors).toEqual([]);
    await page.close();
  }, 90_000);

  it('deletes a preset from the form, after asking once more, on a phone', async () => {
    for (const body of [
      { name: 'gone-soon', mode: 'council', councilModels: ['sim/a', 'sim/b'], chairmanModel: 'sim/c' },
      { name: 'stays', mode: 'vote', modeConfig: { models: ['sim/a', 'sim/b', 'sim/c'] } },
    ])
      expect((await stack.api('POST', '/api/presets', { body })).status).toBe(201);
    const page = await browser().newPage({ viewport: { width: 320, height: 700 }, isMobile: true });
    const errors: string[] = [];
    page.on('pageerror', (error) => errors.push(error.message));
    await page.goto(`${stack.baseUrl}/#/new`);
    await page.waitForSelector('select[name="preset"] option[value="gone-soon"]', { state: 'attached' });
    await page.selectOption('select[name="preset"]', 'gone-soon');
    await page.getByRole('button', { name: 'Delete preset…' }).click();
    // Keep first: nothing is deleted.
    await page.getByRole('button', { name: 'Keep' }).click();
    expect((await stack.api('GET', '/api/presets/gone-soon')).status).toBe(200);
    await page.getByRole('button', { name: 'Delete preset…' }).click();
    expect(await overflow(page)).toBeLessThanOrEqual(0);
    await page.getByRole('button', { name: 'Delete', exact: true }).click();
    await page.waitForSelector('[role="status"]:has-text("Deleted preset \\"gone-soon\\".")');
    expect((await stack.api('GET', '/api/presets/gone-soon')).status).toBe(404);
    expect((await stack.api('GET', '/api/presets/stays')).status).toBe(200);
    // The picker lost it (and kept the others, among them any an earlier test saved).
    const offered = await page.$$eval('select[name="preset"] option', (options) =>
      options.map((o) => (o as HTMLOptionElement).value),
    );
    expect(offered).toContain('stays');
    expect(offered).not.toContain('gone-soon');
    expect(errors).toEqual([]);
    await page.close();
  }, 60_000);
});
