import { LINKS, recordedScenarios, viewOf } from './fixtures/views';
import { outcomeOf } from './outcome';
import type { DeliberationOutcome } from './outcome.types';
import { outcomeSummary, SUMMARY_MAX_LENGTH } from './summary';

const outcome = (name: string) => outcomeOf(viewOf(name), LINKS);

/** The summary after its `Degraded: …` first line, which a degraded run must start with. */
function afterDegradedLine(o: DeliberationOutcome): string {
  const text = outcomeSummary(o);
  if (!o.degraded) return text;
  const head = `Degraded: ${o.degraded.summary}\n\n`;
  expect(text.startsWith(head)).toBe(true);
  return text.slice(head.length);
}

describe('outcomeSummary', () => {
  it.each(recordedScenarios().map(([s, v]) => [s.name, v] as const))(
    '%s: short, with the web link and the transcript URI',
    (_name, view) => {
      const text = outcomeSummary(outcomeOf(view, LINKS));
      expect(text.length).toBeLessThanOrEqual(SUMMARY_MAX_LENGTH);
      expect(text).toContain(`Web: ${LINKS.web}`);
      expect(text).toContain(LINKS.transcript);
    },
  );

  it('starts with the final answer', () => {
    const o = outcome('council-complete');
    expect(outcomeSummary(o).startsWith(o.finalText ?? '-')).toBe(true);
  });

  it('says plainly why there is no final answer', () => {
    expect(afterDegradedLine(outcome('council-failed-final'))).toMatch(
      /^No final answer: the chairman sim\/chairman:fail@synthesis failed \(HTTP 400[^)]*\), so there is no chairman's synthesis\./,
    );
    expect(afterDegradedLine(outcome('jury-failed-final'))).toMatch(
      /^No final answer: the foreman sim\/foreman:fail failed/,
    );
    expect(afterDegradedLine(outcome('delphi-failed-final'))).toMatch(
      /^No final answer: the facilitator .* failed/,
    );
    expect(afterDegradedLine(outcome('debate-failed-final'))).toMatch(
      /^No final answer: the debate deliberation failed \(All votes failed to parse\.\)\./,
    );
    expect(afterDegradedLine(outcome('vote-running'))).toMatch(
      /^No final answer yet: the vote deliberation is still running\./,
    );
    expect(afterDegradedLine(outcome('jury-cancelled'))).toMatch(
      /^No final answer: the jury deliberation was cancelled/,
    );
    expect(afterDegradedLine(outcome('debate-failed-final'))).toContain(
      "Not enough panelists answered for the mode's rules.",
    );
  });

  it('names who failed, and says the result is partial', () => {
    const text = outcomeSummary(outcome('vote-failed-panelist'));
    expect(text).toContain('Partial result');
    expect(text).toContain(
      'Failed: sim/b:fail (voter, answer): HTTP 400 from the simulated provider: simulated failure',
    );
    expect(text).toContain('3 of 4 panelists answered without a failure');
  });

  it("gives each mode's summary line", () => {
    expect(outcomeSummary(outcome('council-complete'))).toMatch(
      /Aggregate ranking: 1\. sim\/athena \(average 1\)/,
    );
    expect(outcomeSummary(outcome('vote-tie'))).toContain(
      'Winner: sim/b:voteB with 1 of 3 votes after a tie, broken by the chairman sim/chairman:voteB.',
    );
    expect(outcomeSummary(outcome('vote-failed-final'))).toMatch(/after a tie, broken alphabetically/);
    expect(outcomeSummary(outcome('debate-complete'))).toContain(
      'Revisions: 1 revised, 1 stood, 1 merged, 0 unreadable.',
    );
    expect(outcomeSummary(outcome('jury-complete'))).toMatch(
      /Verdict: (APPROVE|REVISE|REJECT) \(foreman\); jurors: approve \d/,
    );
    expect(outcomeSummary(outcome('delphi-complete'))).toMatch(
      /Delphi: 2 round\(s\), converged in round 2; final value [\d.]+ \(median/,
    );
  });

  it('cuts a long final answer first, pointing at the transcript, and keeps every summary line', () => {
    const o: DeliberationOutcome = { ...outcome('council-complete'), finalText: 'word '.repeat(20_000) };
    const text = outcomeSummary(o);
    expect(text.length).toBeLessThanOrEqual(SUMMARY_MAX_LENGTH);
    expect(text.startsWith('word word')).toBe(true);
    expect(text).toContain(
      `[… cut here: 100000 characters in all; the full text is in the transcript ${LINKS.transcript}]`,
    );
    expect(text).toContain('Aggregate ranking:');
    expect(text.endsWith(LINKS.transcript)).toBe(true);
  });

  it('never cuts a character in half', () => {
    const o: DeliberationOutcome = { ...outcome('council-complete'), finalText: '😀'.repeat(10_000) };
    const head = outcomeSummary(o).split('\n\n[… cut here')[0];
    expect(head).toMatch(/^(😀)+$/u);
  });

  it('lists at most five failures, then says how many more', () => {
    const base = outcome('council-failed-panelist');
    const failures = Array.from({ length: 8 }, (_, i) => ({ ...base.failures[0], model: `sim/m${i}` }));
    const text = outcomeSummary({ ...base, failures });
    expect(text.match(/^Failed: /gm)).toHaveLength(5);
    expect(text).toContain('… and 3 more failures.');
  });

  it('keeps model-written error texts to one short line each', () => {
    const base = outcome('council-failed-panelist');
    const failures = [{ ...base.failures[0], error: 'x'.repeat(5000) }];
    const text = outcomeSummary({ ...base, failures });
    expect(text.length).toBeLessThanOrEqual(SUMMARY_MAX_LENGTH);
    expect(text.split('\n').find((l) => l.startsWith('Failed:'))?.length).toBeLessThanOrEqual(300);
  });
});
