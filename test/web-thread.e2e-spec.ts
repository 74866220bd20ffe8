/// <reference lib="dom" />
// page.evaluate bodies run in the browser.
import path from 'node:path';
import type { Page } from 'playwright-core';
import { browserSuite, contrast, SHOTS } from './support/web-build';

interface Accepted {
  conversationId: string;
  messageId: string;
}
interface ConversationMessage {
  id: string;
  role: string;
  turn: number;
  content: string;
  status: string;
  config?: Record<string, unknown>;
}
interface Conversation {
  id: string;
  title: string | null;
  messages: ConversationMessage[];
}

/**
 * Issue 20, the web client as a thread: questions shown, follow-ups that keep their roster, a
 * sidebar that says what is active, running and finished, a phone layout with a drawer, a dark
 * theme, and the keyboard. In a real headless Chromium against a real gateway and worker.
 */
describe('web client: conversations as threads, on any screen', () => {
  const { stack, browser } = browserSuite({ SIM_LATENCY_MS: '20' });

  const DESKTOP = { width: 1280, height: 900 };
  const PHONE = { width: 360, height: 740 };

  /** A page that records its uncaught errors (`page.errors`). */
  const open = async (
    hash = '#/new',
    options: { viewport?: { width: number; height: number }; dark?: boolean } = {},
  ): Promise<Page & { errors: string[] }> => {
    const page = (await browser().newPage({
      viewport: options.viewport ?? DESKTOP,
      colorScheme: options.dark ? 'dark' : 'light',
    })) as Page & { errors: string[] };
    page.errors = [];
    page.on('pageerror', (error) => page.errors.push(error.message));
    await page.goto(`${stack.baseUrl}/${hash}`);
    return page;
  };

  const api = async <T>(
    method: string,
    url: string,
    body?: unknown,
    type = 'application/json',
  ): Promise<T> => {
    const response = await fetch(`${stack.baseUrl}${url}`, {
      method,
      headers: body === undefined ? {} : { 'content-type': type },
      body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
    });
    if (!response.ok) throw new Error(`${method} ${url}: ${response.status} ${await response.text()}`);
    return (response.status === 204 ? undefined : await response.json()) as T;
  };
  const start = (body: Record<string, unknown>) => api<Accepted>('POST', '/api/deliberations', body);
  const conversation = (id: string) => api<Conversation>('GET', `/api/conversations/${id}`);
  const settled = async (messageId: string) => {
    for (let i = 0; i < 300; i++) {
      const view = await api<{ status: string }>('GET', `/api/deliberations/${messageId}`);
      if (!['queued', 'running'].includes(view.status)) return view.status;
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error(`${messageId} never settled`);
  };

  const turnStatus = (page: Page, messageId: string) =>
    page.locator(`.turn[data-message-id="${messageId}"] [data-testid="status"]`);
  const complete = (page: Page, messageId: string) =>
    turnStatus(page, messageId)
      .filter({ hasText: /^complete$/ })
      .waitFor({ timeout: 30_000 });
  const messageOf = (page: Page) => /#\/m\/([\w-]+)/.exec(page.url())?.[1] ?? '';
  const overflow = (page: Page) =>
    page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);

  const COUNCIL = ['sim/athena', 'sim/hermes'];

  it('starts a result page with its question, and moves the focus to the new turn', async () => {
    const page = await open();
    await page.fill('textarea[name="question"]', 'Is a monorepo right for a small team?');
    await page.fill('input[name="councilModels"]', COUNCIL.join(', '));
    await page.click('button[type="submit"]');
    await page.waitForURL(/#\/m\//);
    const id = messageOf(page);
    await complete(page, id);
    await page.waitForSelector('text=Synthesis by');
    // The first thing of the page's only turn is the question; the status comes after it.
    const first = await page.evaluate(() => {
      const turn = document.querySelector('.turn');
      return { tag: turn?.firstElementChild?.className, text: turn?.firstElementChild?.textContent };
    });
    expect(first).toEqual({ tag: 'turn-question', text: 'Is a monorepo right for a small team?' });
    const text = await page.locator('main').innerText();
    expect(text.indexOf('Is a monorepo right')).toBeGreaterThanOrEqual(0);
    expect(text.indexOf('Is a monorepo right')).toBeLessThan(text.indexOf('complete'));
    expect(text).not.toMatch(/^\s*council\s+complete/);
    // Focus went to the turn just asked, not to <body>.
    expect(
      await page.evaluate(() => document.activeElement?.closest('.turn')?.getAttribute('data-message-id')),
    ).toBe(id);

    // Jury: the content under evaluation and its question come first.
    const jury = await start({
      question: 'Evaluate',
      mode: 'jury',
      modeConfig: {
        content: 'The **users endpoint** returns a list.',
        originalQuestion: 'Document the users endpoint',
        jurorModels: ['sim/j1', 'sim/j2', 'sim/j3'],
        foremanModel: 'sim/foreman',
      },
    });
    await page.goto(`${stack.baseUrl}/#/m/${jury.messageId}`);
    await complete(page, jury.messageId);
    const card = page.locator('.turn > .content-card');
    expect(await card.locator('.original-question').textContent()).toBe(
      'Question: Document the users endpoint',
    );
    expect(await card.locator('strong').textContent()).toBe('users endpoint');
    expect(
      await page.evaluate(() =>
        document.querySelector('.turn')?.firstElementChild?.classList.contains('content-card'),
      ),
    ).toBe(true);
    // shown once, not again inside the result
    expect(await page.locator('.content-card').count()).toBe(1);
    expect(page.errors).toEqual([]);
    await page.close();
  }, 60_000);

  it('reads a conversation as a thread; Enter sends, Shift+Enter does not; a follow-up keeps the roster', async () => {
    const page = await open();
    await page.fill('textarea[name="question"]', 'Name a prime number.');
    await page.fill('input[name="councilModels"]', 'sim/x, sim/y');
    await page.fill('input[name="chairmanModel"]', 'sim/z');
    await page.click('button[type="submit"]');
    await page.waitForURL(/#\/m\//);
    const first = messageOf(page);
    await complete(page, first);

    // The composer shows the conversation's roster, not the defaults.
    const summary = page.locator('form[aria-label="follow-up"] .roster-summary');
    await summary.filter({ hasText: 'sim/x, sim/y' }).waitFor();
    expect(await summary.textContent()).toContain('sim/z');

    const input = page.locator('form[aria-label="follow-up"] textarea[name="question"]');
    await input.click();
    await page.keyboard.type('And the next one?');
    await page.keyboard.press('Shift+Enter');
    await page.keyboard.type('Explain briefly.');
    expect(await input.inputValue()).toBe('And the next one?\nExplain briefly.');
    expect(await page.locator('.turn').count()).toBe(1);
    expect(messageOf(page)).toBe(first);
    await page.keyboard.press('Enter');
    await page.waitForURL((url) => !url.toString().endsWith(first));
    const second = messageOf(page);
    await complete(page, second);
    expect(
      await page.evaluate(() => document.activeElement?.closest('.turn')?.getAttribute('data-message-id')),
    ).toBe(second);

    // Both turns, in order, each its question then its result.
    expect(await page.locator('.turn .question').allTextContents()).toEqual([
      'Name a prime number.',
      'And the next one?\nExplain briefly.',
    ]);
    expect(
      await page.locator('.turn').evaluateAll((turns) => turns.map((t) => t.getAttribute('data-message-id'))),
    ).toEqual([first, second]);
    expect(await page.locator('.turn .main-answer').count()).toBe(2);

    const view = await api<{ conversationId: string }>('GET', `/api/deliberations/${second}`);
    let stored = await conversation(view.conversationId);
    expect(stored.messages[3].config).toMatchObject({
      councilModels: ['sim/x', 'sim/y'],
      chairmanModel: 'sim/z',
    });

    // The roster can be changed for the next turn.
    await page.click('form[aria-label="follow-up"] .roster-details summary');
    await page.fill('form[aria-label="follow-up"] input[name="chairmanModel"]', 'sim/w');
    await input.fill('A third?');
    await input.press('Enter');
    await page.waitForURL((url) => !url.toString().endsWith(second));
    const third = messageOf(page);
    await complete(page, third);
    stored = await conversation(view.conversationId);
    expect(stored.messages[5].config).toMatchObject({
      councilModels: ['sim/x', 'sim/y'],
      chairmanModel: 'sim/w',
    });
    // The conversation's own page is the same thread.
    await page.goto(`${stack.baseUrl}/#/c/${view.conversationId}`);
    await complete(page, third);
    expect(await page.locator('.turn').count()).toBe(3);
    expect(page.errors).toEqual([]);
    await page.close();
  }, 60_000);

  it('shows the earlier turns a chat brought through /v1 as their answers, then the deliberated one', async () => {
    const answer = await api<{ conclave: { conversationId: string; messageId: string } }>(
      'POST',
      '/v1/chat/completions',
      {
        model: 'conclave/council',
        messages: [
          { role: 'user', content: 'Which sort is stable?' },
          { role: 'assistant', content: 'Merge sort is **stable**; quicksort is not.' },
          { role: 'user', content: 'And heapsort?' },
        ],
      },
    );
    const page = await open(`#/c/${answer.conclave.conversationId}`);
    await complete(page, answer.conclave.messageId);
    const earlier = page.locator('.turn-imported');
    expect(await earlier.count()).toBe(1);
    expect(await earlier.locator('.question').textContent()).toBe('Which sort is stable?');
    expect(await earlier.getByRole('region', { name: 'answer to turn 1' }).textContent()).toContain(
      'Merge sort is stable; quicksort is not.',
    );
    expect(await earlier.locator('strong').textContent()).toBe('stable');
    expect(await page.locator('.turn').count()).toBe(2);
    expect(page.errors).toEqual([]);
    await page.screenshot({ path: path.join(SHOTS, 'thread-imported-history.png'), fullPage: true });
    await page.close();
    // At phone width too: no horizontal scroll.
    const phone = await open(`#/c/${answer.conclave.conversationId}`, { viewport: PHONE });
    await complete(phone, answer.conclave.messageId);
    expect(await phone.locator('.turn-imported .imported-answer').isVisible()).toBe(true);
    expect(await overflow(phone)).toBeLessThanOrEqual(0);
    expect(phone.errors).toEqual([]);
    await phone.screenshot({ path: path.join(SHOTS, 'thread-phone-imported-history.png'), fullPage: true });
    await phone.close();
  }, 60_000);

  it('sidebar: the active item, a live status and title, batch items grouped; the batch list moves on', async () => {
    // A batch whose items take a moment, created before the batches page opens.
    const lines = ['One?', 'Two?', 'Three?'].map((q) =>
      JSON.stringify({
        question: q,
        councilModels: ['sim/a:delay700@answer', 'sim/b'],
        chairmanModel: 'sim/c',
      }),
    );
    const batch = await api<{ batchId: string }>(
      'POST',
      '/api/batches?mode=council&concurrency=3',
      lines.join('\n'),
      'application/x-ndjson',
    );
    const page = await open('#/batches');
    const row = page.locator(`.batch-list li[data-batch-id="${batch.batchId}"]`);
    await row.waitFor();
    // Without a reload, the list reaches the batch's end.
    await page.locator(`.batch-list li[data-batch-id="${batch.batchId}"][data-status="complete"]`).waitFor({
      timeout: 30_000,
    });
    expect(await row.locator('.batch-count').textContent()).toBe('3/3');

    // The batch's items are one group in the sidebar, not three loose entries.
    const group = page.locator(`.sidebar .batch-group[data-batch-id="${batch.batchId}"]`);
    await group.waitFor();
    expect(await group.locator('.entry').count()).toBe(3);
    expect(await page.locator('.sidebar .conversation-list > li.batch-group').count()).toBe(1);
    await group.locator('summary').click();
    await group.locator('a.batch-page-link').click();
    await page.waitForURL(new RegExp(`#/batches/${batch.batchId}$`));
    await page.locator('.batch-progress[data-finished="yes"]').waitFor();

    // A running deliberation: its entry is the active one, with a status that moves on, and its title
    // replaces the question once it is written, without leaving the page.
    await page.goto(`${stack.baseUrl}/#/new`);
    await page.fill(
      'textarea[name="question"]',
      'Which sorting algorithm should a beginner learn first and why?',
    );
    // Slow enough that the sidebar shows it running on a busy machine.
    await page.fill('input[name="councilModels"]', 'sim/slow:delay6000@answer, sim/quick');
    await page.click('button[type="submit"]');
    await page.waitForURL(/#\/m\//);
    const id = messageOf(page);
    const { conversationId } = await api<{ conversationId: string }>('GET', `/api/deliberations/${id}`);
    const entry = page.locator(`.sidebar .entry[data-conversation-id="${conversationId}"]`);
    await entry.locator('.status-running').waitFor();
    await entry.locator('a[aria-current="page"]').waitFor();
    expect(await page.locator('.sidebar [aria-current="page"]').count()).toBe(1);
    // a spinner beside the running call and the running turn
    await page.locator('.turn .status-running').waitFor();
    const spin = await page.evaluate(
      () =>
        getComputedStyle(document.querySelector('.turn .status-running') as Element, '::before')
          .animationName,
    );
    expect(spin).toBe('spin');
    await entry.locator('.status-complete').waitFor({ timeout: 30_000 });
    await settled(id);
    const title = (await conversation(conversationId)).title;
    expect(title).toBeTruthy();
    await entry
      .locator('.entry-title')
      .filter({ hasText: title as string })
      .waitFor({ timeout: 10_000 });
    await page.screenshot({ path: path.join(SHOTS, 'thread-sidebar.png'), fullPage: true });
    expect(page.errors).toEqual([]);
    await page.close();
  }, 60_000);

  it('asks before deleting; a deleted conversation shows a not-found view, with no page error', async () => {
    const started = await start({ question: 'Delete me?', councilModels: COUNCIL });
    await settled(started.messageId);
    const page = await open(`#/c/${started.conversationId}`);
    await complete(page, started.messageId);
    await page.click('button:text("Delete conversation")');
    const dialog = page.locator('[role="alertdialog"]');
    expect(await dialog.textContent()).toContain('cannot be undone');
    // Cancel keeps it, and gives the focus back.
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('Cancel');
    await page.keyboard.press('Enter');
    await dialog.waitFor({ state: 'detached' });
    expect((await conversation(started.conversationId)).id).toBe(started.conversationId);
    await page.click('button:text("Delete conversation")');
    await dialog.locator('button:text-is("Delete")').click();
    await page.waitForURL(/#\/new$/);
    await page
      .locator(`.sidebar [data-conversation-id="${started.conversationId}"]`)
      .waitFor({ state: 'detached' });
    expect((await fetch(`${stack.baseUrl}/api/conversations/${started.conversationId}`)).status).toBe(404);

    for (const hash of [
      `#/c/${started.conversationId}`,
      `#/m/${started.messageId}`,
      '#/c/not-a-conversation',
    ]) {
      await page.goto(`${stack.baseUrl}/${hash}`);
      await page.locator('[data-testid="not-found"]').waitFor();
      expect(await page.locator('[data-testid="not-found"] h2').textContent()).toBe('Not found');
    }
    await page.screenshot({ path: path.join(SHOTS, 'thread-not-found.png') });
    expect(page.errors).toEqual([]);
    await page.close();
  }, 60_000);

  it("a batch item watched while it waits ends 'cancelled' on the page when its batch is cancelled", async () => {
    const accepted = await api<{ batchId: string }>('POST', '/api/batches', {
      defaults: { mode: 'council', councilModels: ['sim/a:delay5000', 'sim/b'], chairmanModel: 'sim/c' },
      items: [{ question: 'Runs first, slowly?' }, { question: 'Waits its turn?' }],
      concurrency: 1,
    });
    const lines = (await (await fetch(`${stack.baseUrl}/api/batches/${accepted.batchId}/results`)).text())
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { messageId: string; status: string });
    const waiting = lines[1].messageId;
    for (const viewport of [DESKTOP, PHONE]) {
      const page = await open(`#/m/${waiting}`, { viewport });
      if (viewport === DESKTOP) {
        await turnStatus(page, waiting)
          .filter({ hasText: /^queued$/ })
          .waitFor({ timeout: 30_000 });
        await api('POST', `/api/batches/${accepted.batchId}/cancel`);
      }
      // On the desktop, without a reload: the stored `cancelled` event reaches the open page. On the
      // phone, opened afterwards, the same end.
      await turnStatus(page, waiting)
        .filter({ hasText: /^cancelled$/ })
        .waitFor({ timeout: 30_000 });
      // It never ran: nothing is said to be kept.
      expect(await page.locator(`.turn[data-message-id="${waiting}"] .cancelled`).innerText()).toBe(
        'Stopped before it started: The batch was cancelled.',
      );
      await page.screenshot({
        path: path.join(SHOTS, `thread-batch-item-cancelled-${viewport.width}.png`),
        fullPage: true,
      });
      expect(await overflow(page)).toBeLessThanOrEqual(0);
      expect(page.errors).toEqual([]);
      await page.close();
    }
  }, 60_000);

  it('fits 360 px: no horizontal scroll on any view; the sidebar is a drawer', async () => {
    const council = await start({
      question: 'A long question with a long word: Donaudampfschifffahrtsgesellschaftskapitänsmütze?',
      councilModels: ['sim/a-model-with-a-long-name', 'sim/another-model-with-a-long-name'],
    });
    await start({ question: 'Second conversation?', councilModels: COUNCIL }); // more in the list
    const jury = await start({
      question: 'Evaluate',
      mode: 'jury',
      modeConfig: {
        content:
          '| a | b | c | d | e | f |\n|---|---|---|---|---|---|\n| one | two | three | four | five | six |',
        jurorModels: ['sim/j1:good', 'sim/j2:poor', 'sim/j3:fair'],
        foremanModel: 'sim/foreman',
      },
    });
    await Promise.all([settled(council.messageId), settled(jury.messageId)]);
    const page = await open('#/new', { viewport: PHONE });
    // Content first: the form, not the sidebar, is what the phone shows.
    expect(await page.locator('.sidebar').isVisible()).toBe(false);
    expect(await page.locator('textarea[name="question"]').isVisible()).toBe(true);
    for (const mode of ['council', 'vote', 'jury', 'debate', 'delphi']) {
      await page.check(`input[name="mode"][value="${mode}"]`);
      expect([mode, await overflow(page)]).toEqual([mode, expect.any(Number)]);
      expect(await overflow(page)).toBeLessThanOrEqual(0);
    }
    await page.screenshot({ path: path.join(SHOTS, 'thread-phone-new.png'), fullPage: true });
    const views: [string, string][] = [
      ['conversation', `#/c/${council.conversationId}`],
      ['message', `#/m/${jury.messageId}`],
      ['batches', '#/batches'],
    ];
    for (const [name, hash] of views) {
      await page.goto(`${stack.baseUrl}/${hash}`);
      if (name === 'batches') await page.locator('.batches h2').waitFor();
      else await page.locator('.turn [data-testid="status"]').filter({ hasText: 'complete' }).waitFor();
      expect([name, await overflow(page)]).toEqual([name, expect.any(Number)]);
      expect(await overflow(page)).toBeLessThanOrEqual(0);
      await page.screenshot({ path: path.join(SHOTS, `thread-phone-${name}.png`), fullPage: true });
    }

    // The drawer: a menu button opens it, Escape closes it and gives the focus back, a link closes it.
    const menu = page.locator('button.menu-button');
    expect(await menu.getAttribute('aria-expanded')).toBe('false');
    await menu.click();
    await page.locator('.sidebar[data-open="yes"]').waitFor();
    await page.waitForFunction(
      () => getComputedStyle(document.querySelector('.sidebar') as Element).transform === 'none',
    );
    expect(await page.locator('.sidebar').isVisible()).toBe(true);
    expect(await menu.getAttribute('aria-expanded')).toBe('true');
    expect(await overflow(page)).toBeLessThanOrEqual(0);
    await page.screenshot({ path: path.join(SHOTS, 'thread-phone-drawer.png') });
    await page.keyboard.press('Escape');
    await page.waitForFunction(
      () => !document.querySelector('.sidebar')?.checkVisibility({ visibilityProperty: true }),
    );
    expect(await page.evaluate(() => document.activeElement?.classList.contains('menu-button'))).toBe(true);
    await menu.click();
    await page.click(`.sidebar .entry[data-conversation-id="${council.conversationId}"] a`);
    await page.waitForURL(new RegExp(`#/c/${council.conversationId}$`));
    await page.waitForFunction(
      () => !document.querySelector('.sidebar')?.checkVisibility({ visibilityProperty: true }),
    );
    expect(await menu.getAttribute('aria-expanded')).toBe('false');

    // On a desktop there is no menu button: the sidebar is always there.
    await page.setViewportSize(DESKTOP);
    expect(await menu.isVisible()).toBe(false);
    expect(await page.locator('.sidebar').isVisible()).toBe(true);
    expect(page.errors).toEqual([]);
    await page.close();
  }, 60_000);

  it('follows the system theme: dark under a dark colour scheme, text contrast AA in both themes', async () => {
    const started = await start({ question: 'Contrast in the dark?', councilModels: COUNCIL });
    const failed = await start({
      question: 'Fails?',
      councilModels: ['sim/a:fail', 'sim/b:fail'],
    });
    await Promise.all([settled(started.messageId), settled(failed.messageId)]);
    for (const dark of [false, true]) {
      const page = await open('#/new', { dark });
      const background = await page.evaluate(() => getComputedStyle(document.body).backgroundColor);
      const channels = (background.match(/\d+/g) ?? []).slice(0, 3).map(Number);
      if (dark) expect(Math.max(...channels)).toBeLessThan(60);
      else expect(Math.min(...channels)).toBeGreaterThan(200);
      await page.locator('input[name="mode"]').first().waitFor();
      const checks = [await contrast(page)];
      for (const [hash, id] of [
        [`#/m/${started.messageId}`, started.messageId],
        [`#/m/${failed.messageId}`, failed.messageId],
      ]) {
        await page.goto(`${stack.baseUrl}/${hash}`);
        await turnStatus(page, id)
          .filter({ hasText: /complete|failed/ })
          .waitFor();
        await page.locator('.turn-question').waitFor();
        checks.push(await contrast(page));
      }
      await page.click('button:text("Delete conversation")');
      checks.push(await contrast(page));
      await page.screenshot({
        path: path.join(SHOTS, `thread-${dark ? 'dark' : 'light'}.png`),
        fullPage: true,
      });
      for (const { checked, failures } of checks) {
        expect(checked).toBeGreaterThan(10);
        expect([dark ? 'dark' : 'light', failures]).toEqual([dark ? 'dark' : 'light', []]);
      }
      expect(page.errors).toEqual([]);
      await page.close();
    }
  }, 60_000);

  it('keyboard: the skip link focuses main; arrow keys, Home and End move between the mode tabs', async () => {
    const page = await open();
    await page.locator('input[name="mode"]').first().waitFor();
    await page.keyboard.press('Tab');
    expect(await page.evaluate(() => document.activeElement?.className)).toBe('skip-link');
    expect(await page.locator('.skip-link').isVisible()).toBe(true);
    await page.keyboard.press('Enter');
    expect(await page.evaluate(() => document.activeElement?.id)).toBe('main');
    expect(new URL(page.url()).hash).toBe('#/new');

    await page.focus('input[name="mode"][value="council"]');
    const chosen = () =>
      page.evaluate(() => [
        document.querySelector<HTMLInputElement>('input[name="mode"]:checked')?.value,
        (document.activeElement as HTMLInputElement | null)?.value,
      ]);
    await page.keyboard.press('ArrowRight');
    expect(await chosen()).toEqual(['vote', 'vote']);
    await page.keyboard.press('End');
    expect(await chosen()).toEqual(['delphi', 'delphi']);
    await page.keyboard.press('Home');
    expect(await chosen()).toEqual(['council', 'council']);
    await page.keyboard.press('ArrowLeft');
    expect(await chosen()).toEqual(['delphi', 'delphi']);
    expect(await page.textContent('.mode-summary')).toContain('estimation rounds');
    await page.screenshot({ path: path.join(SHOTS, 'thread-new-form.png'), fullPage: true });
    await page.close();
  }, 30_000);

  it("Delphi's form sends questionType and the options of a qualitative question", async () => {
    const page = await open();
    await page.check('input[name="mode"][value="delphi"]');
    await page.fill('textarea[name="question"]', 'Which repository layout should we use?');
    await page.fill('input[name="modeConfig.panelistModels"]', 'sim/p1, sim/p2, sim/p3');
    await page.fill('input[name="modeConfig.facilitatorModel"]', 'sim/f');
    expect(await page.locator('textarea[name="modeConfig.options"]').count()).toBe(0);
    await page.selectOption('select[name="modeConfig.questionType"]', 'qualitative');
    await page.fill('textarea[name="modeConfig.options"]', 'Monorepo');
    await page.click('button[type="submit"]');
    expect(await page.textContent('[data-field="modeConfig.options"]')).toMatch(/2 to 10 options/);
    await page.fill('textarea[name="modeConfig.options"]', 'Monorepo\nPolyrepo\n\nHybrid');
    await page.click('button[type="submit"]');
    await page.waitForURL(/#\/m\//);
    const id = messageOf(page);
    await complete(page, id);
    const { conversationId } = await api<{ conversationId: string }>('GET', `/api/deliberations/${id}`);
    expect((await conversation(conversationId)).messages[1].config).toMatchObject({
      questionType: 'qualitative',
      options: ['Monorepo', 'Polyrepo', 'Hybrid'],
    });
    await page.close();
  }, 60_000);
});
