import type { MessageStatus } from '@conclave/contracts';
import { FleissKappaAccumulator } from '../fleiss';
import { JuryReportBuilder } from './jury';
import type { ReportItem, ReportStageRow } from './rows';

const item = (index: number): ReportItem => ({
  index,
  messageId: `m-${index}`,
  mode: 'jury',
  status: 'complete' as MessageStatus,
  reference: null,
  key: null,
});

const juror = (model: string, seat: number, score: number, verdict: string): ReportStageRow => ({
  stageType: 'deliberation',
  model,
  participant: seat,
  data: {
    scores: { accuracy: score, completeness: score, clarity: score, relevance: score, actionability: score },
    verdict,
    parseSuccess: true,
  },
});

describe('jury agreement intervals (issue 36)', () => {
  it('gives Fleiss’ κ and each dimension’s α an item-bootstrap interval around the value', () => {
    const builder = new JuryReportBuilder();
    const verdicts = ['APPROVE', 'REVISE', 'REJECT'];
    const check = new FleissKappaAccumulator(verdicts);
    for (let i = 0; i < 30; i++) {
      const base = 2 + (i % 7);
      const v = verdicts[i % 3];
      const other = verdicts[(i + 1) % 3];
      const given = [v, v, i % 5 === 0 ? other : v];
      check.addRatings(given);
      builder.addItem(item(i), [
        juror('sim/a', 1, base, given[0]),
        juror('sim/b', 2, base + (i % 2), given[1]),
        juror('sim/c', 3, base + 1, given[2]),
      ]);
    }
    const jury = builder.result({ seed: 'b', resamples: 200 });
    const kappa = jury.fleissKappa;
    expect(kappa.value).toBeCloseTo(check.result().value!, 12);
    expect(kappa.interval).toMatchObject({ method: 'percentile-bootstrap', confidence: 0.95 });
    expect(kappa.interval!.lower).toBeLessThanOrEqual(kappa.value!);
    expect(kappa.interval!.upper).toBeGreaterThanOrEqual(kappa.value!);
    for (const d of jury.dimensions) {
      expect(d.alpha.value).not.toBeNull();
      expect(d.alpha.interval).toMatchObject({ method: 'percentile-bootstrap' });
      expect(d.alpha.interval!.lower).toBeLessThanOrEqual(d.alpha.value!);
      expect(d.alpha.interval!.upper).toBeGreaterThanOrEqual(d.alpha.value!);
    }
  });

  it('gives no interval where the coefficient is undefined', () => {
    const builder = new JuryReportBuilder();
    builder.addItem(item(0), [juror('sim/a', 1, 5, 'APPROVE'), juror('sim/b', 2, 6, 'APPROVE')]);
    const jury = builder.result({ seed: 'b', resamples: 50 });
    expect(jury.fleissKappa).toMatchObject({ value: null, interval: null });
    expect(jury.dimensions[0].alpha).toMatchObject({ value: null, interval: null });
  });
});
