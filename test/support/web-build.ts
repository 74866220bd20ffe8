import { chromium, type Browser, type Page } from 'playwright-core';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { TestStack } from './harness';

const ROOT = path.resolve(__dirname, '../..');
/** What the client bundle is built from. */
const SOURCES = ['apps/web', 'libs/contracts/src', 'package-lock.json'];

function* files(entry: string): Generator<string> {
  const full = path.join(ROOT, entry);
  if (!existsSync(full)) return;
  if (statSync(full).isFile()) {
    yield entry;
    return;
  }
  for (const name of readdirSync(full).sort()) {
    if (name === 'node_modules') continue;
    yield* files(path.join(entry, name));
  }
}

/**
 * The web client built as `npm run build:web` builds it (production React), once per state of its
 * sources: the suites that drive it in a browser share one build in the temp directory instead of
 * each spending a vite build. Read-only for them; a suite that changes files builds its own.
 */
export function builtWebClient(): string {
  const hash = createHash('sha256');
  for (const file of SOURCES.flatMap((entry) => [...files(entry)])) {
    hash
      .update(file)
      .update('\0')
      .update(readFileSync(path.join(ROOT, file)))
      .update('\0');
  }
  const dir = path.join(tmpdir(), `conclave-web-build-${hash.digest('hex').slice(0, 16)}`);
  if (existsSync(path.join(dir, 'index.html'))) return dir;
  const staging = `${dir}.${process.pid}.${Date.now()}`;
  mkdirSync(staging, { recursive: true });
  const build = spawnSync(
    process.execPath,
    [
      path.join(ROOT, 'node_modules', 'vite', 'bin', 'vite.js'),
      'build',
      '--config',
      'apps/web/vite.config.mts',
      '--logLevel',
      'warn',
    ],
    // jest's NODE_ENV=test would bundle React's development build.
    { cwd: ROOT, env: { ...process.env, NODE_ENV: 'production', WEB_OUT_DIR: staging }, encoding: 'utf8' },
  );
  if (build.status !== 0) throw new Error(`web build failed: ${build.stderr}`);
  try {
    renameSync(staging, dir);
  } catch {
    // Another suite finished the same build first: use it.
    rmSync(staging, { recursive: true, force: true });
  }
  return dir;
}

/** Debian's headless Chromium as every browser suite drives it (CHROMIUM_PATH to use another). */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}

/** Where the browser suites write their screenshots. */
export const SHOTS = path.join(ROOT, 'test-artifacts');

/**
 * A describe block's browser setup: the built web client served by its own TestStack (`env` on
 * top) and one Chromium, started in beforeAll and stopped in afterAll.
 */
export function browserSuite(env: Record<string, string> = {}): { stack: TestStack; browser: () => Browser } {
  const stack = new TestStack({ WEB_DIR: builtWebClient(), ...env });
  let browser: Browser | undefined;
  beforeAll(async () => {
    mkdirSync(SHOTS, { recursive: true });
    await stack.start();
    browser = await launchChromium();
  }, 90_000);
  afterAll(async () => {
    await browser?.close();
    await stack.stop();
  });
  return {
    stack,
    browser: () => {
      if (!browser) throw new Error('the browser is not started yet (beforeAll)');
      return browser;
    },
  };
}

/**
 * Every visible text (outside SVG charts) under the elements `within` selects, checked against
 * WCAG AA (4.5:1) on the background it is drawn on: how many texts were checked, and the failures.
 * A text on no opaque background is measured against the page's own, or white.
 */
export function contrast(page: Page, within = 'body'): Promise<{ checked: number; failures: string[] }> {
  return page.evaluate((selector) => {
    const rgb = (c: string) => (c.match(/[\d.]+/g) ?? []).map(Number);
    const opaque = (c: number[]) => c.length === 3 || (c.length === 4 && c[3] > 0);
    const luminance = ([r, g, b]: number[]) => {
      const channel = (v: number) => ((v /= 255) <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4);
      return 0.2126 * channel(r) + 0.7152 * channel(g) + 0.0722 * channel(b);
    };
    const page = rgb(getComputedStyle(document.documentElement).backgroundColor);
    const background = (el: Element | null): number[] => {
      for (; el; el = el.parentElement) {
        const c = rgb(getComputedStyle(el).backgroundColor);
        if (opaque(c)) return c.slice(0, 3);
      }
      return opaque(page) ? page.slice(0, 3) : [255, 255, 255];
    };
    const failures = new Set<string>();
    let checked = 0;
    for (const root of document.querySelectorAll(selector)) {
      const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
      for (let node = walker.nextNode(); node; node = walker.nextNode()) {
        const el = node.parentElement;
        if (!el || !node.textContent?.trim() || el.closest('svg') || !el.checkVisibility()) continue;
        checked++;
        const [a, b] = [luminance(rgb(getComputedStyle(el).color)), luminance(background(el))];
        const ratio = (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
        if (ratio < 4.5)
          failures.add(
            `${el.tagName}.${el.className} "${node.textContent.trim().slice(0, 30)}": ${ratio.toFixed(2)}`,
          );
      }
    }
    return { checked, failures: [...failures] };
  }, within);
}
