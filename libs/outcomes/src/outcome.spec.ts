import type { CouncilResult, DeliberationGrades, DelphiResult, JuryResult } from '@conclave/contracts';
import { expectOutcomeFits, expectValid } from './fixtures/expectations';
import { LINKS, recordedScenarios, viewOf } from './fixtures/views';
import { outcomeOf } from './outcome';
import type { PanelistOutcome } from './outcome.types';
import { usageOf } from './roles';

const outcome = (name: string) => outcomeOf(viewOf(name), LINKS);
const panelist = (name: string, model: string): PanelistOutcome => {
  const found = outcome(name).panelists.find((p) => p.model === model);
  if (!found) throw new Error(`${name}: no panelist ${model}`);
  return found;
};

describe('outcomeOf', () => {
  it.each(recordedScenarios().map(([s, v]) => [s.name, s, v] as const))(
    '%s: fits the schema and says what happened',
    (_name, scenario, view) => {
      expectOutcomeFits(scenario, view, outcomeOf(view, LINKS));
    },
  );

  it('passes the links through', () => {
    expect(outcome('council-complete').links).toEqual(LINKS);
  });

  it('council: each member with its answer, its ranking by model name and its average rank', () => {
    const view = viewOf('council-complete');
    const result = view.result as CouncilResult;
    const o = outcomeOf(view, LINKS);
    const members = result.stage1.map((s) => s.model);
    expect(o.panelists.map((p) => p.model)).toEqual(members);
    for (const p of o.panelists) {
      expect(p.answer).toBe(result.stage1.find((s) => s.model === p.model)?.response);
      expect([...(p.ranking ?? [])].sort()).toEqual([...members].sort());
      expect(p.averageRank).toBe(
        result.stage2Metadata.aggregateRankings.find((a) => a.model === p.model)?.averageRank,
      );
      expect(result.stage2Metadata.labelToModel[p.label ?? '']).toBe(p.model);
    }
    expect(o.council?.aggregateRanking.map((a) => a.model)).toEqual(
      result.stage2Metadata.aggregateRankings.map((a) => a.model),
    );
  });

  it('council: a member that failed is named with its error, though the result never lists it', () => {
    const p = panelist('council-failed-panelist', 'sim/hermes:fail');
    expect(p).toMatchObject({
      failed: true,
      role: 'council',
      error: expect.stringContaining('simulated failure'),
    });
    expect(p.answer).toBeUndefined();
    expect(outcome('council-failed-panelist').failures.map((f) => f.stage)).toEqual(['stage1', 'stage2']);
  });

  it('a failed chairman, foreman or facilitator is never presented as the final text', () => {
    for (const name of ['council-failed-final', 'jury-failed-final', 'delphi-failed-final']) {
      const o = outcome(name);
      expect(o.finalText).toBeNull();
      expect(o.finalAuthor?.failed).toBe(true);
      expect(o.error).toEqual(expect.any(String));
    }
  });

  it("a seat's fallbacks: the author is the model that wrote, after those that failed before it", () => {
    const view = viewOf('council-complete');
    const chairman = view.calls.find((c) => c.stage === 'stage3');
    if (!chairman) throw new Error('no chairman call');
    const failedFirst = { ...chairman, model: 'sim/first:fail', ok: false, error: 'simulated failure' };
    const withFallback = {
      ...view,
      calls: [...view.calls.filter((c) => c !== chairman), failedFirst, chairman],
    };
    const o = outcomeOf(withFallback, LINKS);
    expect(o.finalAuthor).toEqual({
      role: 'chairman',
      model: chairman.model,
      failed: false,
      failedBefore: [{ model: 'sim/first:fail', error: 'simulated failure' }],
    });
    expectValid(o);
    // Every model failed: the last one asked is the author that failed, the others before it.
    const second = { ...failedFirst, model: 'sim/second:fail' };
    const allFailed = {
      ...withFallback,
      status: 'failed' as const,
      result: { ...(view.result as CouncilResult), stage3: undefined },
      calls: [...view.calls.filter((c) => c !== chairman), failedFirst, second],
    };
    expect(outcomeOf(allFailed, LINKS).finalAuthor).toMatchObject({
      model: 'sim/second:fail',
      failed: true,
      failedBefore: [{ model: 'sim/first:fail' }],
    });
  });

  it('vote: votes name models, the tally adds up, a tie says how it was broken', () => {
    const o = outcome('vote-tie');
    const models = o.panelists.map((p) => p.model);
    for (const p of o.panelists) {
      expect(models).toContain(p.vote);
      expect(p.reason).toEqual(expect.any(String));
    }
    expect(o.vote?.tally.reduce((n, t) => n + t.votes, 0)).toBe(o.vote?.validVotes);
    expect(o.vote).toMatchObject({
      tie: true,
      tiebreak: { method: 'chairman', model: 'sim/chairman:voteB' },
    });
    expect(o.vote?.tiedModels.sort()).toEqual([...models].sort());
    expect(o.finalAuthor).toEqual({ role: 'winner', model: o.vote?.winner?.model, failed: false });
  });

  it('debate: each debater with its action, its revised and original answers and its vote', () => {
    const o = outcome('debate-complete');
    expect(o.panelists.map((p) => p.action)).toEqual(['REVISE', 'STAND', 'MERGE']);
    for (const p of o.panelists) {
      expect(p.answer).toEqual(expect.any(String));
      expect(p.originalAnswer).toEqual(expect.any(String));
      expect(o.panelists.map((q) => q.model)).toContain(p.vote);
    }
    expect(o.debate?.revisions).toEqual({ revised: 1, stood: 1, merged: 1, unreadable: 0 });
    expect(o.finalText).toBe(
      o.debate?.winner && o.panelists.find((p) => p.model === o.debate?.winner?.model)?.answer,
    );
  });

  it('debate: the same model twice is two seats, its usage counted once per seat', () => {
    const view = viewOf('debate-duplicates');
    const o = outcomeOf(view, LINKS);
    expect(o.panelists.map((p) => p.model)).toEqual(['sim/a:voteA', 'sim/a:voteA', 'sim/b:voteB']);
    const seats = o.panelists.map((p) => p.usage?.completionTokens ?? 0).reduce((a, b) => a + b, 0);
    expect(seats).toBe(usageOf(view.calls)?.completionTokens);
    expect(new Set(o.panelists.map((p) => p.label)).size).toBe(3);
  });

  it('jury: each juror with its scores and verdict; the verdict distribution and dimension means', () => {
    const view = viewOf('jury-complete');
    const result = view.result as JuryResult;
    const o = outcomeOf(view, LINKS);
    for (const p of o.panelists) {
      const juror = result.jurors.find((j) => j.model === p.model);
      expect(p).toMatchObject({
        scores: juror?.scores,
        verdict: juror?.verdict,
        averageScore: juror?.average,
      });
    }
    expect(o.jury).toMatchObject({
      majorityVerdict: result.majorityVerdict,
      finalVerdict: result.foreman.finalVerdict,
      tally: result.voteTally,
      dimensionMeans: result.dimensionAverages,
      successfulJurors: 3,
    });
  });

  it('jury: a failed juror is named, and two jurors are still enough', () => {
    const o = outcome('jury-failed-panelist');
    expect(o.panelists.find((p) => p.failed)).toMatchObject({ model: 'sim/j2:fail', role: 'juror' });
    expect(o).toMatchObject({
      enoughAnswered: true,
      partial: true,
      jury: { successfulJurors: 2, jurors: 3 },
    });
  });

  it('delphi: once over, every estimate per round under its model', () => {
    const view = viewOf('delphi-complete');
    const result = view.result as DelphiResult;
    const o = outcomeOf(view, LINKS);
    expect(o.delphi).toMatchObject({
      attributed: true,
      converged: result.converged,
      convergenceRound: result.convergenceRound,
      median: result.report.median,
      interval: result.report.confidenceInterval,
    });
    for (const p of o.panelists) {
      expect(p.estimates?.map((e) => e.round)).toEqual(result.rounds.map((r) => r.roundNumber));
      expect(p.estimates?.every((e) => e.model === p.model)).toBe(true);
    }
    expect(o.delphi?.rounds[0].median).toBe((result.rounds[0].stats as { median: number }).median);
  });

  it('delphi: while the exercise runs, estimates carry no model name (05-delphi.md)', () => {
    const view = viewOf('delphi-running');
    const models = ((view.result as DelphiResult).rounds ?? []).flatMap((r) =>
      r.estimates.map((e) => e.model),
    );
    expect(models.length).toBeGreaterThan(0);
    const o = outcomeOf(view, LINKS);
    expect(o.delphi?.attributed).toBe(false);
    expect(o.delphi?.rounds[0].estimates).toHaveLength(models.length);
    const anonymous = JSON.stringify(o.delphi);
    for (const model of models) expect(anonymous).not.toContain(model);
    for (const p of o.panelists) expect(p.estimates).toBeUndefined();
  });

  it('per-model usage sums the calls that reported it; a call without figures adds none', () => {
    const view = viewOf('jury-failed-panelist');
    const o = outcomeOf(view, LINKS);
    expect(o.panelists.find((p) => p.model === 'sim/j2:fail')?.usage).toBeUndefined();
    const j1 = view.calls.filter((c) => c.model === 'sim/j1:good');
    expect(o.panelists.find((p) => p.model === 'sim/j1:good')?.usage).toEqual(usageOf(j1));
  });

  it('a graded deliberation carries its grades, fitting the schema; an ungraded one has none', () => {
    const grades: DeliberationGrades = {
      answers: [
        {
          stageType: 'stage1',
          model: 'sim/a',
          role: 'council',
          participant: 0,
          grade: { verdict: 'correct', extracted: '391', reason: 'equal', grader: 'numeric' },
        },
        {
          stageType: 'stage1',
          model: 'sim/b',
          role: 'council',
          participant: 1,
          grade: { verdict: 'unreadable', reason: 'no number', grader: 'numeric' },
        },
      ],
      final: null,
    };
    const graded = outcomeOf({ ...viewOf('council-complete'), grades }, LINKS);
    expectValid(graded);
    expect(graded.grades).toEqual(grades);
    const withFinal = outcomeOf(
      {
        ...viewOf('council-complete'),
        grades: { ...grades, final: { ...grades.answers[0], stageType: 'stage3' } },
      },
      LINKS,
    );
    expectValid(withFinal);
    expect(outcome('council-complete')).not.toHaveProperty('grades');
    // A grade the schema does not know is refused (the schema is not open).
    const odd = {
      ...graded,
      grades: { ...grades, final: { ...grades.answers[0], grade: { verdict: 'maybe' } } },
    };
    expect(() => expectValid(odd as never)).toThrow();
  });

  it('a view without a result still fits the schema, and is partial', () => {
    const view = { ...viewOf('council-complete'), result: null };
    const o = outcomeOf(view, LINKS);
    expectValid(o);
    expect(o).toMatchObject({ finalText: null, panelists: [], enoughAnswered: null, partial: true });
  });
});
