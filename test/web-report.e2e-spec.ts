/// <reference lib="dom" />
/// <reference lib="dom.iterable" />
// page.evaluate bodies run in the browser.
import { mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { BatchAccepted, BatchResultLine, BatchView } from '@conclave/contracts';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { TestStack } from './support/harness';
import { builtWebClient, contrast, launchChromium } from './support/web-build';

const ROOT = path.resolve(__dirname, '..');
const SHOTS = path.join(ROOT, 'test-artifacts');

const ALL_GOOD = ['sim/j1:good', 'sim/j2:good', 'sim/j3:good'];
const SPLIT = ['sim/j1:good', 'sim/j2:fair', 'sim/j3:poor'];
const ALL_POOR = ['sim/j1:poor', 'sim/j2:poor', 'sim/j3:poor'];

/** Six documents; item 0 splits the jury three ways, the others it approves unanimously. */
function items(flipped: number | null) {
  return Array.from({ length: 6 }, (_, i) => ({
    question: `Is document ${i} fit to publish?`,
    reference: 'APPROVE',
    modeConfig: {
      content: `## Document ${i}\nA short, accurate note about topic ${i}.`,
      ...(i === 0 ? { jurorModels: SPLIT } : i === flipped ? { jurorModels: ALL_POOR } : {}),
    },
  }));
}

/**
 * The report and compare pages in Chromium against the real stack: two jury batches on the same
 * items, B with one verdict flipped. The report draws its charts (labelled SVG, whiskers), gives
 * the agreement with its reading, links the item with the most disagreement, copies and downloads
 * its Markdown (the same text as `?format=md`) and fits a phone; the compare page lists the flipped
 * item; a comparison the server refuses is explained; the first view does not load either page.
 */
describe('report and compare pages in a browser', () => {
  const webDir = builtWebClient();
  const stack = new TestStack({ WEB_DIR: webDir, SIM_LATENCY_MS: '2', WORKER_CONCURRENCY: '16' });
  let browser: Browser;
  const batch = { a: '', b: '', vote: '' };
  let linesA: BatchResultLine[] = [];
  let linesB: BatchResultLine[] = [];

  const submit = async (body: unknown): Promise<string> => {
    const answer = await stack.api<BatchAccepted & { message?: string }>('POST', '/api/batches', { body });
    if (answer.status !== 202) throw new Error(`batch: ${answer.status} ${JSON.stringify(answer.body)}`);
    return answer.body.batchId;
  };

  const finished = async (batchId: string) => {
    const deadline = Date.now() + 90_000;
    for (;;) {
      const view = await stack.api<BatchView>('GET', `/api/batches/${batchId}`);
      if (view.body.finishedAt) return view.body;
      if (Date.now() > deadline) throw new Error(`batch ${batchId} did not finish`);
      await new Promise((r) => setTimeout(r, 200));
    }
  };

  const results = async (batchId: string): Promise<BatchResultLine[]> => {
    const response = await fetch(`${stack.baseUrl}/api/batches/${batchId}/results?format=jsonl`);
    return (await response.text())
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as BatchResultLine)
      .sort((x, y) => x.index - y.index);
  };

  beforeAll(async () => {
    mkdirSync(SHOTS, { recursive: true });
    await stack.start();
    const jury = { mode: 'jury', modeConfig: { jurorModels: ALL_GOOD, foremanModel: 'sim/foreman' } };
    [browser, batch.a, batch.b, batch.vote] = await Promise.all([
      launchChromium(),
      submit({ name: 'Docs, first jury', defaults: jury, items: items(null) }),
      submit({ name: 'Docs, second jury', defaults: jury, items: items(2) }),
      submit({
        name: 'A vote',
        defaults: {
          mode: 'vote',
          modeConfig: { models: ['sim/a', 'sim/b', 'sim/c'], chairmanModel: 'sim/chair' },
        },
        items: [{ question: 'Tabs or spaces?' }],
      }),
    ]);
    await Promise.all([finished(batch.a), finished(batch.b), finished(batch.vote)]);
    [linesA, linesB] = await Promise.all([results(batch.a), results(batch.b)]);
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await stack.stop();
  });

  const contexts: BrowserContext[] = [];
  afterEach(async () => {
    await Promise.all(contexts.splice(0).map((c) => c.close()));
  });

  const open = async (
    hash: string,
    selector: string,
    viewport = { width: 1280, height: 900 },
    colorScheme: 'light' | 'dark' = 'light',
  ): Promise<Page> => {
    const context = await browser.newContext({
      viewport,
      colorScheme,
      acceptDownloads: true,
      permissions: ['clipboard-read', 'clipboard-write'],
    });
    contexts.push(context);
    const page = await context.newPage();
    await page.goto(`${stack.baseUrl}/${hash}`);
    await page.waitForSelector(selector, { timeout: 30_000 });
    return page;
  };

  const reportReady = '.report[data-batch-id] section[aria-label="jury"]';
  const compareReady = '.compare section[aria-label="differences"]';

  /** What sticks out of the window sideways (outside boxes that scroll), and the page's widths. */
  const sideways = (page: Page) =>
    page.evaluate(() => ({
      page: document.documentElement.scrollWidth,
      window: window.innerWidth,
      wide: [...document.querySelectorAll('.report *')]
        .filter((el) => el.getBoundingClientRect().right > window.innerWidth + 0.5)
        .filter((el) => {
          for (let up = el.parentElement; up; up = up.parentElement)
            if (['auto', 'scroll', 'hidden'].includes(getComputedStyle(up).overflowX)) return false;
          return true;
        })
        .slice(0, 5)
        .map((el) => `${el.tagName}.${el.className}`),
    }));

  /** The texts under .report that fail WCAG AA contrast (and there are texts to check). */
  const contrastFailures = async (page: Page) => {
    const { checked, failures } = await contrast(page, '.report');
    expect(checked).toBeGreaterThan(0);
    return failures;
  };

  it('the batch page links to the report, which draws labelled charts with interval whiskers', async () => {
    const page = await open(`#/batches/${batch.a}`, '.batch-progress .report-link');
    await page.click('.batch-progress .report-link');
    await page.waitForSelector(reportReady, { timeout: 30_000 });
    expect(page.url()).toContain(`#/batches/${batch.a}/report`);
    expect(await page.locator('.report h2').textContent()).toBe('Report: Docs, first jury');
    expect(await page.locator('.kpi[data-key="items"] .kpi-value').textContent()).toBe('6 / 6');
    // every chart an image with a label
    expect(await page.locator('.report svg:not([role="img"][aria-label])').count()).toBe(0);
    const dims = page.locator('svg.interval-chart[aria-label^="Mean score per dimension"]');
    expect(await dims.locator('.interval-row').count()).toBe(5);
    expect(await dims.locator('circle.point').count()).toBe(5);
    expect(await dims.locator('path.whisker-line').count()).toBeGreaterThan(0);
    const box = await dims.locator('path.whisker-line').first().boundingBox();
    expect(box!.width).toBeGreaterThan(1);
    const leniency = page.locator('svg.interval-chart[aria-label^="Leniency per juror"]');
    // three jurors on five items, three others on the split one: a juror is its model id with its flags
    expect(await leniency.locator('.interval-row').count()).toBe(5);
    expect(await leniency.locator('line.reference-line').count()).toBe(1);
    // the verdicts: five approved unanimously, one split
    expect(
      await page.locator('section[aria-label="jury"] .hbars').first().getAttribute('aria-label'),
    ).toMatch(/^Final verdicts.*APPROVE 5/);
    // agreement with its reading and the scale it is read on
    const agreement = page.locator('section[aria-label="agreement"]');
    expect(await agreement.textContent()).toMatch(/Fleiss' κ on the jurors' verdicts-?\d\.\d{3}/);
    expect(await agreement.locator('.badge.reading').count()).toBeGreaterThan(0);
    expect(await agreement.textContent()).toContain('Landis & Koch');
    await page.close();
  }, 60_000);

  it('links the item with the most disagreement to its deliberation', async () => {
    const page = await open(`#/batches/${batch.a}/report`, reportReady);
    const first = page.locator('section[aria-label="most disagreement"] a.item-link').first();
    expect(await first.getAttribute('href')).toBe(`#/m/${linesA[0].messageId}`);
    await first.click();
    await page.waitForSelector('.result.jury section[aria-label="jurors"]', { timeout: 30_000 });
    expect(page.url()).toContain(`#/m/${linesA[0].messageId}`);
    await page.close();
  }, 60_000);

  it('copies and downloads the same Markdown as ?format=md', async () => {
    const markdown = await (await fetch(`${stack.baseUrl}/api/batches/${batch.a}/report?format=md`)).text();
    expect(markdown.length).toBeGreaterThan(100);
    const page = await open(`#/batches/${batch.a}/report`, reportReady);
    await page.getByRole('button', { name: 'Copy Markdown' }).click();
    await page.getByText('Markdown copied.').waitFor();
    // the same report, computed again: only its time differs
    const undated = (text: string) => text.replace(/generated [\d:.TZ-]+/, 'generated …');
    expect(undated(await page.evaluate(() => navigator.clipboard.readText()))).toBe(undated(markdown));
    const [download] = await Promise.all([
      page.waitForEvent('download'),
      page.getByRole('button', { name: 'Download Markdown' }).click(),
    ]);
    expect(download.suggestedFilename()).toBe(`report-${batch.a}.md`);
    expect(undated(readFileSync((await download.path())!, 'utf8'))).toBe(undated(markdown));
    await page.close();
  }, 60_000);

  it('fits 360 px without sideways scrolling; screenshots light and dark; text contrast', async () => {
    for (const [hash, ready, name] of [
      [`#/batches/${batch.a}/report`, reportReady, 'report'],
      [`#/compare?a=${batch.a}&b=${batch.b}`, compareReady, 'compare'],
    ] as const) {
      const narrow = await open(hash, ready, { width: 360, height: 740 });
      const widths = await sideways(narrow);
      expect(widths.wide).toEqual([]);
      expect(widths.page).toBeLessThanOrEqual(widths.window);
      await narrow.screenshot({ path: path.join(SHOTS, `${name}-phone-light.png`), fullPage: true });
      for (const scheme of ['light', 'dark'] as const) {
        const page = await open(hash, ready, { width: 1280, height: 900 }, scheme);
        expect(await contrastFailures(page)).toEqual([]);
        await page.screenshot({ path: path.join(SHOTS, `${name}-desktop-${scheme}.png`), fullPage: true });
        await page.close();
      }
      const dark = await open(hash, ready, { width: 390, height: 844 }, 'dark');
      await dark.screenshot({ path: path.join(SHOTS, `${name}-phone-dark.png`), fullPage: true });
    }
  }, 90_000);

  it('compares with a second batch picked on the report: the flipped item, differences with intervals', async () => {
    const page = await open(`#/batches/${batch.a}/report`, reportReady);
    const picker = page.getByRole('form', { name: 'compare with another batch' });
    await picker.getByRole('combobox', { name: 'Compare with' }).selectOption(batch.b);
    await picker.getByRole('button', { name: 'Compare' }).click();
    await page.waitForSelector(compareReady, { timeout: 30_000 });
    expect(page.url()).toContain(`#/compare?a=${batch.a}&b=${batch.b}`);
    expect(await page.locator('.compared-batch h3').allTextContents()).toEqual([
      'A: Docs, first jury complete',
      'B: Docs, second jury complete',
    ]);
    const flips = page.locator('section[aria-label="flipped items"]');
    expect(await flips.locator('ol.flips li').count()).toBe(1);
    expect(await flips.locator('a').evaluateAll((links) => links.map((a) => a.getAttribute('href')))).toEqual(
      [`#/m/${linesA[2].messageId}`, `#/m/${linesB[2].messageId}`],
    );
    expect(await flips.locator('li').textContent()).toMatch(/APPROVE → B REJECT/);
    const charts = page.locator('section[aria-label="differences"] svg.interval-chart');
    expect(await charts.count()).toBeGreaterThan(0);
    expect(await charts.first().locator('line.reference-line').count()).toBe(1);
    expect(await page.locator('section[aria-label="differences"] table tbody tr').count()).toBeGreaterThan(0);
    await page.close();
  }, 60_000);

  it('explains a comparison the server refuses', async () => {
    const answer = await stack.api<{ message: string }>(
      'GET',
      `/api/batches/compare?a=${batch.a}&b=${batch.vote}`,
    );
    expect(answer.status).toBe(400);
    const page = await open(`#/compare?a=${batch.a}&b=${batch.vote}`, '[data-testid="report-failed"]');
    const text = await page.locator('[data-testid="report-failed"]').textContent();
    expect(text).toContain('These batches cannot be compared');
    expect(text).toContain(answer.body.message);
    await page.close();
  }, 60_000);

  it('the first view does not load the report or compare code', async () => {
    const context = await browser.newContext();
    contexts.push(context);
    const page = await context.newPage();
    const requested: string[] = [];
    page.on('request', (request) => requested.push(new URL(request.url()).pathname));
    await page.goto(`${stack.baseUrl}/#/new`);
    await page.waitForSelector('form', { timeout: 30_000 });
    await page.waitForLoadState('networkidle');
    expect(requested.filter((p) => /^\/assets\/(report|compare)-/.test(p))).toEqual([]);
    await page.goto(`${stack.baseUrl}/#/batches/${batch.a}/report`);
    await page.waitForSelector(reportReady, { timeout: 30_000 });
    expect(requested.some((p) => /^\/assets\/report-/.test(p))).toBe(true);
  }, 60_000);
});
