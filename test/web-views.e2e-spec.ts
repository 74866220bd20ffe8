/// <reference lib="dom" />
/// <reference lib="dom.iterable" />
// page.evaluate bodies run in the browser.
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { builtWebClient, contrast, launchChromium } from './support/web-build';
import { TestStack } from './support/harness';

const ROOT = path.resolve(__dirname, '..');
const SHOTS = path.join(ROOT, 'test-artifacts');

type Mode = 'council' | 'vote' | 'jury' | 'debate' | 'delphi';

/**
 * The result views in Chromium, each mode run through the API against the simulated panel and its
 * page opened at `#/m/<messageId>`: names in place of labels, every ballot, charts that are drawn
 * (points, axes, thresholds, legends) and that fit a phone; screenshots of each at desktop and
 * phone width, light and dark.
 */
describe('result views in a browser', () => {
  const webDir = builtWebClient();
  const stack = new TestStack({ WEB_DIR: webDir, SIM_LATENCY_MS: '5' });
  let browser: Browser;
  const runs = {} as Record<Mode | 'delphiOneRound' | 'delphiQualitative', string>;

  /** What each view shows once it is complete, in the view's own markup. */
  const ready: Record<Mode, string> = {
    council: '.result.council section[aria-label="evaluations"]',
    vote: '.result.vote section[aria-label="tiebreak"]',
    jury: '.result.jury section[aria-label="summary"]',
    debate: '.result.debate section[aria-label="votes"]',
    delphi: '.result.delphi section[aria-label="report"]',
  };

  beforeAll(async () => {
    mkdirSync(SHOTS, { recursive: true });
    await stack.start();
    const [launched, ...ids] = await Promise.all([
      launchChromium(),
      ...[
        {
          question: 'Is a monorepo right for a small team?',
          mode: 'council',
          councilModels: ['sim/athena', 'sim/hermes', 'sim/apollo'],
          chairmanModel: 'sim/chairman',
        },
        // a three-way tie: every voter for a different answer; the chairman breaks it
        {
          question: 'Which database should we start with?',
          mode: 'vote',
          modeConfig: { models: ['sim/a:voteA', 'sim/b:voteB', 'sim/c:voteC'], chairmanModel: 'sim/chair' },
        },
        {
          question: 'Evaluate the endpoint documentation',
          mode: 'jury',
          modeConfig: {
            content: '## GET /api/users\nReturns a list of users.',
            originalQuestion: 'Document the users endpoint',
            jurorModels: ['sim/j1:good', 'sim/j2:fair', 'sim/j3:poor'],
            foremanModel: 'sim/foreman',
          },
        },
        {
          question: 'Should companies adopt a 4-day work week?',
          mode: 'debate',
          modeConfig: { models: ['sim/a:revise:voteB', 'sim/b:stand:voteB', 'sim/c:merge:voteA'] },
        },
        // one panelist far off, never moving: an outlier through every round
        {
          question: 'How many software engineers will be employed globally by 2030?',
          mode: 'delphi',
          modeConfig: {
            panelistModels: ['sim/p1', 'sim/p2', 'sim/p3', 'sim/p4:stubborn'],
            facilitatorModel: 'sim/f',
            maxRounds: 3,
          },
        },
        // everyone the same: converged in round 1, a chart of one round
        {
          question: 'How many moons does Mars have?',
          mode: 'delphi',
          modeConfig: {
            panelistModels: ['sim/p1:fixed', 'sim/p2:fixed', 'sim/p3:fixed', 'sim/p4:fixed'],
            facilitatorModel: 'sim/f',
          },
        },
        {
          question: 'Should we use Postgres or Mongo?',
          mode: 'delphi',
          modeConfig: { panelistModels: ['sim/p1', 'sim/p2', 'sim/p3', 'sim/p4'], facilitatorModel: 'sim/f' },
        },
      ].map(async (body) => {
        const { messageId, events } = await stack.run(body);
        if (events.at(-1)?.type !== 'complete') throw new Error(`${body.mode} did not complete`);
        return messageId;
      }),
    ]);
    browser = launched;
    [
      runs.council,
      runs.vote,
      runs.jury,
      runs.debate,
      runs.delphi,
      runs.delphiOneRound,
      runs.delphiQualitative,
    ] = ids;
  }, 90_000);
  afterAll(async () => {
    await browser?.close();
    await stack.stop();
  });

  const open = async (
    messageId: string,
    selector: string,
    viewport = { width: 1280, height: 900 },
    colorScheme: 'light' | 'dark' = 'light',
  ): Promise<Page> => {
    const page = await browser.newPage({ viewport });
    await page.emulateMedia({ colorScheme });
    await page.goto(`${stack.baseUrl}/#/m/${messageId}`);
    await page.waitForSelector(selector, { timeout: 30_000 });
    return page;
  };

  /** Every "Response X" a reader can see in the result outside a label badge. */
  const bareLabels = (page: Page) =>
    page.evaluate(() => {
      const found: string[] = [];
      for (const result of document.querySelectorAll('.result')) {
        const walker = document.createTreeWalker(result, NodeFilter.SHOW_TEXT);
        for (let node = walker.nextNode(); node; node = walker.nextNode()) {
          const el = node.parentElement;
          if (!el || el.closest('.label-badge') || !el.checkVisibility()) continue;
          found.push(
            ...((node.nodeValue ?? '').match(/Response [A-Z]\b/g) ?? []).map(
              (label) =>
                `${label} in ${el.closest('section')?.getAttribute('aria-label')}: ${el.outerHTML.slice(0, 300)}`,
            ),
          );
        }
      }
      return found;
    });

  /** The texts under .result that fail WCAG AA contrast (and there are texts to check). */
  const contrastFailures = async (page: Page) => {
    const { checked, failures } = await contrast(page, '.result');
    expect(checked).toBeGreaterThan(0);
    return failures;
  };

  /** Opens every closed <details> in the result, so what it holds is on the page. */
  const openAll = (page: Page) =>
    page.evaluate(() =>
      document.querySelectorAll('.result details').forEach((d) => d.setAttribute('open', '')),
    );

  it.each(['council', 'vote', 'debate'] as const)(
    '%s: names in place of labels, each label kept as a badge',
    async (mode) => {
      const page = await open(runs[mode], ready[mode]);
      await openAll(page);
      expect(await bareLabels(page)).toEqual([]);
      const chips = page.locator('.result .name-chip');
      expect(await chips.count()).toBeGreaterThan(3);
      expect(await chips.first().locator('.label-badge').textContent()).toMatch(/^Response [A-Z]$/);
      expect((await chips.first().locator('.chip-name').textContent())?.startsWith('sim/')).toBe(true);
      await page.close();
    },
    60_000,
  );

  it("council: the average-rank chart beside the table, each evaluator's extracted ranking by name", async () => {
    const page = await open(runs.council, ready.council);
    const table = await page.locator('section[aria-label="ranking"] table').boundingBox();
    const ranks = await page.locator('.rank-chart [role="img"]').boundingBox();
    expect(table && ranks).toBeTruthy();
    // side by side at desktop width
    expect(Math.abs(table!.y - ranks!.y)).toBeLessThan(40);
    expect(ranks!.x).toBeGreaterThan(table!.x + table!.width - 1);
    expect(await page.locator('.rank-chart .scale-track .dot').count()).toBe(3);
    expect(await page.locator('.rank-chart .scale-track .mark').count()).toBe(9);
    expect(await page.locator('.rank-chart .legend li').count()).toBe(2);
    const lists = page.locator('article.evaluation ol.ranking-list');
    expect(await lists.count()).toBe(3);
    expect(await lists.first().locator('li .name-chip').count()).toBe(3);
    await page.close();
  }, 60_000);

  it('vote: every ballot with its voter, choice and reason; the tally; the tiebreak reasoning', async () => {
    const page = await open(runs.vote, ready.vote);
    const ballots = page.locator('.ballots .ballot');
    expect(await ballots.count()).toBe(3);
    for (const ballot of await ballots.all()) {
      expect(await ballot.locator('.voter').textContent()).toMatch(/^sim\/[abc]:vote[ABC]$/);
      expect(await ballot.locator('.ballot-head .name-chip').count()).toBe(1);
      expect(((await ballot.locator('.ballot-reason').textContent()) ?? '').trim()).toMatch(
        /^\[simulated vote by .*\] .* is the most complete and practical\.$/,
      );
    }
    expect(await page.locator('section[aria-label="votes"] .hbar-row[data-key]').count()).toBe(3);
    expect(await page.textContent('.tie-note')).toMatch(/^Tie between .* with 1 vote each\.$/);
    const tiebreak = page.locator('section[aria-label="tiebreak"]');
    expect(await tiebreak.textContent()).toMatch(
      /The chairman sim\/chair chose .*On balance .* is the stronger answer/,
    );
    expect(await tiebreak.locator('.name-chip').count()).toBe(2);
    // every answer, not only the winner's
    expect(await page.locator('section[aria-label="answers"] article.answer').count()).toBe(3);
    await page.close();
  }, 60_000);

  it("debate: the vote chart's labels never overlap its bars, at desktop and phone width", async () => {
    for (const viewport of [
      { width: 1280, height: 900 },
      { width: 360, height: 740 },
    ]) {
      const page = await open(runs.debate, ready.debate, viewport);
      const overlaps = await page.evaluate(() => {
        const boxes = (row: Element, selector: string) =>
          [...row.querySelectorAll(selector)].map((el) => el.getBoundingClientRect());
        const meet = (a: DOMRect, b: DOMRect) =>
          a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom;
        const rows = [...document.querySelectorAll('section[aria-label="votes"] .hbar-row[data-key]')];
        const labels = rows.flatMap((row) => boxes(row, '.hbar-label, .hbar-label *'));
        const bars = rows.flatMap((row) => boxes(row, '.hbar-track, .hbar'));
        return {
          rows: rows.length,
          bars: bars.filter((b) => b.width > 0).length,
          overlaps: labels.filter((l) => l.width > 0 && bars.some((b) => meet(l, b))).length,
        };
      });
      expect(overlaps).toEqual({ rows: 3, bars: expect.any(Number), overlaps: 0 });
      expect(overlaps.bars).toBeGreaterThanOrEqual(5); // three tracks, two bars with votes
      expect(await page.locator('section[aria-label="votes"] .ballot').count()).toBe(3);
      await page.close();
    }
  }, 60_000);

  it('delphi: a chart of one round has a point per panelist, y-axis ticks, the threshold and a legend', async () => {
    const page = await open(runs.delphiOneRound, ready.delphi);
    const chart = page.locator('svg.convergence[role="img"]');
    expect(await chart.locator('circle.estimate').count()).toBe(4);
    expect(await chart.locator('.y-tick').count()).toBeGreaterThanOrEqual(3);
    expect(await chart.locator('.y-axis').count()).toBe(1);
    expect(await chart.locator('path.threshold').count()).toBe(1);
    const box = await chart.locator('path.threshold').boundingBox();
    expect(box!.width).toBeGreaterThan(10);
    expect(await page.locator('.legend[aria-label="chart legend"] li').count()).toBe(7); // 4 + mean, band, zone
    await page
      .locator('section[aria-label="rounds"]')
      .screenshot({ path: path.join(SHOTS, 'delphi-one-round.png') });
    await page.close();
  }, 60_000);

  it('delphi: the outlier is a point of its own far from the others, in every round', async () => {
    const page = await open(runs.delphi, ready.delphi);
    const points = await page.locator('svg.convergence circle.estimate').evaluateAll((circles) =>
      circles.map((c) => ({
        key: c.getAttribute('data-key'),
        y: c.getBoundingClientRect().y,
        title: c.querySelector('title')?.textContent ?? '',
      })),
    );
    expect(points).toHaveLength(12); // four panelists, three rounds
    const outlier = points.filter((p) => p.title.startsWith('sim/p4:stubborn'));
    const others = points.filter((p) => !p.title.startsWith('sim/p4:stubborn'));
    expect(outlier).toHaveLength(3);
    expect(Math.max(...outlier.map((p) => p.y))).toBeLessThan(Math.min(...others.map((p) => p.y)) - 40);
    expect(await page.locator('svg.convergence path.threshold').count()).toBe(3);
    expect(await page.locator('svg.convergence polyline.trajectory').count()).toBe(4);
    await page.close();
  }, 60_000);

  it('delphi: a qualitative question shows stacked bars with a legend and the agreement threshold', async () => {
    const page = await open(runs.delphiQualitative, ready.delphi);
    expect(await page.locator('.stacked .slice').count()).toBeGreaterThan(0);
    expect(await page.locator('.stacked .threshold-mark').count()).toBeGreaterThan(0);
    expect(await page.locator('.stacked .legend li').allTextContents()).toContain(
      'converged at 75% agreement',
    );
    await page.close();
  }, 60_000);

  it('jury: the charts have axes and legends', async () => {
    const page = await open(runs.jury, ready.jury);
    expect(await page.locator('.range-chart .axis .tick').allTextContents()).toEqual([
      '0',
      '2',
      '4',
      '6',
      '8',
      '10',
    ]);
    expect(await page.locator('.range-chart .legend li').count()).toBe(2);
    expect(await page.locator('svg.radar .tick-label').count()).toBe(6); // 5 and 10 on each of 3 radars
    expect(await page.locator('section[aria-label="summary"] .hbars .axis .tick').count()).toBeGreaterThan(1);
    await page.close();
  }, 60_000);

  it.each(['council', 'vote', 'jury', 'debate', 'delphi'] as const)(
    '%s: fits 360 px without sideways scrolling; screenshots at desktop and phone width, light and dark',
    async (mode) => {
      const narrow = await open(runs[mode], ready[mode], { width: 360, height: 740 });
      await openAll(narrow);
      const widths = await narrow.evaluate(() => ({
        page: document.documentElement.scrollWidth,
        window: window.innerWidth,
        // what sticks out of the window (not inside a box that scrolls), to say why when it fails
        wide: [...document.querySelectorAll('.result *')]
          .filter((el) => el.getBoundingClientRect().right > window.innerWidth + 0.5)
          .filter((el) => {
            for (let up = el.parentElement; up; up = up.parentElement)
              if (['auto', 'scroll', 'hidden'].includes(getComputedStyle(up).overflowX)) return false;
            return true;
          })
          .slice(0, 5)
          .map((el) => `${el.tagName}.${el.className}`),
      }));
      expect(widths.wide).toEqual([]);
      expect(widths.page).toBeLessThanOrEqual(widths.window);
      // every chart is an image with a label
      const unlabelled = await narrow.locator('.result svg:not([role="img"][aria-label])').count();
      expect(unlabelled).toBe(0);
      await narrow.close();
      for (const [device, viewport] of [
        ['desktop', { width: 1280, height: 900 }],
        ['phone', { width: 390, height: 844 }],
      ] as const) {
        for (const scheme of ['light', 'dark'] as const) {
          const page = await open(runs[mode], ready[mode], viewport, scheme);
          if (device === 'desktop') expect(await contrastFailures(page)).toEqual([]);
          await page.screenshot({
            path: path.join(SHOTS, `${mode}-${device}-${scheme}.png`),
            fullPage: true,
          });
          await page.close();
        }
      }
    },
    60_000,
  );
});
