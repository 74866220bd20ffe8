import type { BatchAccepted, BatchReport, BatchView, ReportPanelGain } from '@conclave/contracts';
import { isRightOn } from '../libs/deliberation/src/shared/graded-simulation';
import { TestStack } from './support/harness';
import { sleep } from './support/wait';

/**
 * Panel gain on the real stack (issue 37, "Tests and figures"): graded batches of simulated
 * members whose accuracy is known (`sim/<name>:acc70`, independent across names and items) under a
 * chairman or revisers that follow the majority (`:follow`), so the report's figures have closed
 * forms to land on.
 *
 * - Council, 300 items, three members at p = 0.7, a following chairman: each member's accuracy
 *   interval contains 0.70; the panel's contains p³ + 3p²(1 − p) = 0.784 (a strict majority of the
 *   three answers is right; the chairman, right on nothing alone, takes it).
 * - Debate, revisers following the majority of the answers they are shown: a wrong first answer is
 *   fixed when the two others are right (probability (1 − p)·p² = 0.147 per answer); a right one is
 *   broken only when the two others are wrong with the same wrong number (about one in 80 of
 *   those: (1 − p)²·p/80 ≈ 0.0008). So revisions fix more than they break, and the accuracy
 *   change after − before lands on about 0.146.
 *
 * The simulation is deterministic per SIM_SEED and question, so these are checks of one fixed draw
 * against 95 % intervals, not of coverage (the library spec checks coverage over 2 000 simulated
 * batches). Four 95 % intervals all contain their values in about 0.95⁴ ≈ 81 % of draws: of SIM_SEED
 * s0…s9, s3 and s9 miss one, and so does the default seed `conclave` (seat 2 right on 230 of 300,
 * 76.7 %: its Wilson interval starts at 71.6 %), a 1-in-5 event of the draw, not of the code. The
 * stack is pinned to `s0`, the first of s0, s1, … where all four contain their values, and the
 * test first checks that the report's counts are exactly the simulation's own draws
 * (`isRightOn`), which holds under any seed.
 */
const SEED = 's0';

const P = 0.7;
const PANEL = P ** 3 + 3 * P ** 2 * (1 - P);

describe('panel gain on the real stack with simulated accuracies', () => {
  const stack = new TestStack({ WORKER_CONCURRENCY: '32', SIM_SEED: SEED });
  beforeAll(() => stack.start(), 60_000);
  afterAll(() => stack.stop());

  async function submit(body: unknown): Promise<string> {
    const accepted = await stack.api<BatchAccepted & { message?: string }>('POST', '/api/batches', { body });
    if (accepted.status !== 202) throw new Error(`batch refused: ${JSON.stringify(accepted.body)}`);
    return accepted.body.batchId;
  }

  async function finished(batchId: string, timeoutMs = 240_000): Promise<BatchView> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const view = (await stack.api<BatchView>('GET', `/api/batches/${batchId}`)).body;
      if (view.status !== 'queued' && view.status !== 'running') return view;
      if (Date.now() > deadline) throw new Error(`batch ${batchId} not finished: ${JSON.stringify(view)}`);
      await sleep(250);
    }
  }

  async function gainOf(batchId: string): Promise<{ report: BatchReport; gain: ReportPanelGain }> {
    const view = await finished(batchId);
    expect(view.status).toBe('complete');
    const got = await stack.api<BatchReport>('GET', `/api/batches/${batchId}/report`);
    expect(got.status).toBe(200);
    expect(got.body.panelGain).toHaveLength(1);
    return { report: got.body, gain: got.body.panelGain![0] };
  }

  const contains = (interval: { lower: number; upper: number } | null | undefined, value: number) => {
    expect(interval).toBeTruthy();
    expect([interval!.lower <= value, value <= interval!.upper, interval!.lower, interval!.upper]).toEqual([
      true,
      true,
      interval!.lower,
      interval!.upper,
    ]);
  };

  const range = (n: number) => Array.from({ length: n }, (_, i) => i);

  it('council of three independent 70 % members and a following chairman, 300 items: 0.70 each, 0.784 for the panel', async () => {
    const started = Date.now();
    const questions = range(300).map(
      (i) => `What is ${i + 12} times ${(i % 9) + 3}? End with a line FINAL ANSWER: <number>.`,
    );
    const batchId = await submit({
      name: 'panel gain: council',
      defaults: {
        mode: 'council',
        councilModels: ['sim/m1:acc70', 'sim/m2:acc70', 'sim/m3:acc70'],
        chairmanModel: 'sim/chair:follow',
      },
      items: range(300).map((i) => ({ question: questions[i], expected: (i + 12) * ((i % 9) + 3) })),
    });
    const { report, gain } = await gainOf(batchId);
    process.stdout.write(
      `council batch of 300 graded items: ${Date.now() - started} ms; ${gain.sentences[0]}\n`,
    );
    expect(report.items.complete).toBe(300);
    expect(gain.mode).toBe('council');
    expect(gain.items).toBe(300);
    expect(gain.members.map((m) => m.model)).toEqual(['sim/m1:acc70', 'sim/m2:acc70', 'sim/m3:acc70']);
    // The report's counts are the simulation's own draws, member by member and for the majority.
    const right = questions.map((question) =>
      ['m1', 'm2', 'm3'].map((persona) => isRightOn({ seed: SEED, persona, question }, P)),
    );
    expect(gain.members.map((m) => m.accuracy.count)).toEqual(
      [0, 1, 2].map((k) => right.filter((r) => r[k]).length),
    );
    expect(gain.panel.count).toBe(right.filter((r) => r.filter(Boolean).length >= 2).length);
    for (const member of gain.members) {
      expect(member.accuracy.n).toBe(300);
      expect(member.accuracy.unreadable + member.accuracy.missing).toBe(0);
      contains(member.accuracy.interval, P);
    }
    contains(gain.panel.interval, PANEL);
    // The chairman follows the majority: the panel is right exactly where a majority of members is.
    expect(gain.panel.count).toBe(gain.majority.accuracy.count);
    expect(gain.panelMinusMajority.onlyA + gain.panelMinusMajority.onlyB).toBe(0);
    // Against the best member: p_panel − p ≈ +8.4 points, run through the exact test.
    expect(gain.panelMinusBest!.test.run).toBe(true);
    contains(gain.panelMinusBest!.difference.interval, PANEL - P);
    // The Markdown report carries the section, its tables and its methods.
    const markdown = await (await fetch(`${stack.baseUrl}/api/batches/${batchId}/report?format=md`)).text();
    expect(markdown).toContain('## Panel gain: council');
    expect(markdown).toContain(`| **Panel (final answer)** | ${(gain.panel.value! * 100).toFixed(1)} % [`);
    expect(markdown).toMatch(
      /\| Tango score interval for a paired difference \| panel gain \\\(council\\\): /,
    );
    expect(gain.sentences[0]).toMatch(
      /^The panel was right on \d+\.\d % of items \(\d+ of 300\), its best member alone/,
    );
  }, 300_000);

  it('debate with majority-following revisers, 300 items: revisions fix more than they break, as the closed form says', async () => {
    const started = Date.now();
    const batchId = await submit({
      name: 'panel gain: debate',
      defaults: {
        mode: 'debate',
        modeConfig: { models: ['sim/a:acc70:follow', 'sim/b:acc70:follow', 'sim/c:acc70:follow'] },
      },
      items: range(300).map((i) => ({
        question: `What is ${i + 40} minus ${(i % 11) + 5}? End with a line FINAL ANSWER: <number>.`,
        expected: i + 40 - ((i % 11) + 5),
      })),
    });
    const { gain } = await gainOf(batchId);
    process.stdout.write(
      `debate batch of 300 graded items: ${Date.now() - started} ms; fixed ${gain.revision?.fixed}, broke ${gain.revision?.broke}\n`,
    );
    expect(gain.mode).toBe('debate');
    const revision = gain.revision!;
    expect(revision.answers).toBe(900);
    expect(revision.fixed).toBeGreaterThan(revision.broke);
    const fixedPerAnswer = (1 - P) * P ** 2;
    const brokePerAnswer = ((1 - P) ** 2 * P) / 80;
    contains(revision.change.interval, fixedPerAnswer - brokePerAnswer);
    contains(revision.before.interval, P);
    // Fixed answers, a sum of 900 answers' indicators clustered in 300 items: within 4 standard
    // errors of the closed form's expectation even with the items' correlation (deterministic draw).
    const expectedFixed = 900 * fixedPerAnswer;
    expect(Math.abs(revision.fixed - expectedFixed)).toBeLessThan(4 * Math.sqrt(3 * expectedFixed));
    expect(revision.broke).toBeLessThanOrEqual(5);
  }, 300_000);
});
