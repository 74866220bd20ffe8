import { panelGainMarkdown } from '@conclave/analysis';
import { escapeMarkdown, markdownTable as table } from '@conclave/outcomes';
import type {
  BatchComparison,
  BatchReport,
  BatchUsageSummary,
  ReportCouncil,
  ReportDebate,
  ReportDelphi,
  ReportDistribution,
  ReportFigure,
  ReportInterval,
  ReportItemLink,
  ReportJury,
  ReportMethod,
  ReportModelUsage,
  ReportPositionBias,
  ReportPositionTest,
  ReportQuantiles,
  ReportRate,
  ReportReferenceAgreement,
  ReportVote,
} from '@conclave/contracts';

/**
 * Batch reports and comparisons as Markdown a person can paste into a document. Everything that
 * came from a user or a model (names, model ids, keys, references, answers, error texts) is
 * escaped: a pipe cannot open a table cell, a newline cannot end the row, `[`, `<` and `!` cannot
 * make a link, an image or HTML.
 */

const text = (value: string | null | undefined): string =>
  value === null || value === undefined ? '—' : escapeMarkdown(value);

function number(value: number | null | undefined, digits = 2): string {
  if (value === null || value === undefined || !Number.isFinite(value)) return '—';
  if (Number.isInteger(value) && Math.abs(value) < 1e15) return String(value);
  const abs = Math.abs(value);
  if (abs !== 0 && (abs < 10 ** -digits || abs >= 1e9)) return value.toExponential(2);
  return value.toFixed(digits);
}

const percent = (value: number | null | undefined, digits = 1): string =>
  value === null || value === undefined || !Number.isFinite(value)
    ? '—'
    : `${(value * 100).toFixed(digits)} %`;

const usd = (value: number | null | undefined): string =>
  value === null || value === undefined
    ? '—'
    : `$${value < 0.01 && value !== 0 ? value.toExponential(2) : value.toFixed(4)}`;

/** ` [lower, upper]` of an interval that may be missing (a report from before it was computed). */
const bracket = (interval: ReportInterval | null | undefined, digits = 3): string =>
  interval ? ` [${number(interval.lower, digits)}, ${number(interval.upper, digits)}]` : '';

function figure(f: ReportFigure, digits = 2): string {
  if (f.value === null) return `— (${escapeMarkdown(f.note ?? 'no data')}; n = ${f.n})`;
  const interval = f.interval
    ? ` [${number(f.interval.lower, digits)}, ${number(f.interval.upper, digits)}]`
    : '';
  return `${number(f.value, digits)}${interval} (n = ${f.n})`;
}

/** A figure whose value and interval are already in percent (e.g. a mean absolute percentage error). */
function percentFigure(f: ReportFigure): string {
  if (f.value === null) return `— (${escapeMarkdown(f.note ?? 'no data')}; n = ${f.n})`;
  const unit = (v: number) => `${Math.abs(v) < 1e9 ? v.toFixed(1) : number(v, 1)} %`;
  const interval = f.interval ? ` [${unit(f.interval.lower)}, ${unit(f.interval.upper)}]` : '';
  return `${unit(f.value)}${interval} (n = ${f.n})`;
}

function rate(r: ReportRate): string {
  if (r.value === null) return `— (n = ${r.n})`;
  const interval = r.interval ? ` [${percent(r.interval.lower)}, ${percent(r.interval.upper)}]` : '';
  return `${percent(r.value)}${interval} (${r.count}/${r.n})`;
}

const quantiles = (q: ReportQuantiles, unit = ''): string =>
  q.n === 0 ? '— (n = 0)' : `${number(q.p50, 0)}${unit} / ${number(q.p95, 0)}${unit} (n = ${q.n})`;

const link = (item: ReportItemLink): string =>
  `[item ${item.index}${item.key === null ? '' : ` (key ${escapeMarkdown(item.key)})`}](${item.webPath})`;

function distribution(d: ReportDistribution): string {
  if (d.n === 0) return '— (n = 0)';
  return `${d.categories.map((c) => `${text(c.category)}: ${c.count} (${percent(c.share)})`).join(', ')} (n = ${d.n})`;
}

function positionTest(test: ReportPositionTest): string {
  if (!test.run) return `not tested: ${text(test.reason)}`;
  const adjusted =
    test.holmAdjustedPValue === null ? '' : `, Holm-adjusted p = ${number(test.holmAdjustedPValue, 4)}`;
  return (
    `χ² = ${number(test.statistic)} (df = ${test.degreesOfFreedom}), p = ${number(test.pValue, 4)}${adjusted} ` +
    `(item-level permutation test over ${test.items} items, ${test.resamples} relabellings)`
  );
}

/** A leaderboard entry against the next one down: do their 95 % intervals overlap? */
const againstNext = (overlaps: boolean | null | undefined): string =>
  overlaps === true ? 'not distinguishable at 95 %' : overlaps === false ? 'intervals apart' : '—';

// The note is the server's own sentence, never model or user text.
const leaderboard = (note: string | null | undefined): string[] => (note ? [note, ''] : []);

function positionBias(p: ReportPositionBias): string[] {
  const lines = ['### Position bias', '', p.explanation, ''];
  if (!p.computable) return lines;
  for (const group of p.groups) {
    lines.push(
      `${group.answersShown} answers shown, ${group.items} items, ${group.validVotes} valid votes; ${positionTest(group.test)}`,
      '',
      ...table(
        ['Position', 'Votes (95 % CI)', 'Expected share'],
        group.positions.map((pos) => [text(pos.label), rate(pos.votes), percent(pos.expectedShare)]),
      ),
    );
  }
  return lines;
}

function reference(r: ReportReferenceAgreement | null): string[] {
  if (r === null) return [];
  const lines = [
    '### Agreement with the reference',
    '',
    `Items with a reference: ${r.itemsWithReference} (without: ${r.itemsWithoutReference}), counted over all the mode's items; ${r.matching.n} compared with ${r.comparedWith}.`,
    '',
  ];
  const e = r.notCompared;
  if (e.count > 0) {
    const parts = [
      e.failed > 0 ? `${e.failed} failed` : null,
      e.cancelled > 0 ? `${e.cancelled} cancelled` : null,
      e.unfinished > 0 ? `${e.unfinished} still queued or running` : null,
      e.noOutcome > 0 ? `${e.noOutcome} without an outcome` : null,
      e.unusableReference > 0 ? `${e.unusableReference} with a reference that cannot be compared` : null,
    ].filter((p): p is string => p !== null);
    const named = e.items.map((i) => `${link(i)} (${text(i.reason)})`).join(', ');
    lines.push(
      `Not compared: ${e.count} items with a reference (${parts.join(', ')}): ${named}${e.count > e.items.length ? `, … (${e.count} in all)` : ''}.`,
      '',
    );
  }
  lines.push(`- Matching: ${rate(r.matching)}`);
  if (r.cohen) {
    lines.push(
      `- Cohen's κ: ${figure(r.cohen.kappa, 3)}${r.cohen.reading ? ` — ${r.cohen.reading}` : ''} (Landis & Koch); chance agreement ${percent(r.cohen.expectedAgreement)}`,
      '',
      'Confusion matrix (rows: reference, columns: panel):',
      '',
      ...table(
        ['Reference / panel', ...r.cohen.categories.map(text)],
        r.cohen.categories.map((category, i) => [text(category), ...r.cohen!.confusion[i].map(String)]),
      ),
    );
  }
  if (r.numeric) {
    lines.push(
      `- Mean absolute error of the final value (the last round's mean, as the mode reports it): ${figure(r.numeric.meanAbsoluteError)}`,
      `- Median absolute error: ${number(r.numeric.medianAbsoluteError.p50)} (n = ${r.numeric.medianAbsoluteError.n})`,
      `- Mean signed error (final value − reference): ${figure(r.numeric.meanSignedError)}`,
      `- Mean absolute percentage error: ${percentFigure(r.numeric.meanAbsolutePercentageError)}`,
      `- Reference inside the 95 % prediction interval of the final estimates (mean ± t·s·√(1 + 1/n)): ${rate(r.numeric.predictionIntervalCoverage)}`,
      `- Reference within the range of the final estimates: ${rate(r.numeric.finalRangeCoverage)}`,
      '',
    );
  }
  if (r.mismatches.length > 0) {
    lines.push(
      r.numeric === null
        ? 'Items that did not match:'
        : r.cohen === null
          ? 'Items whose reference lies outside the prediction interval (panel: the final value):'
          : 'Items outside the prediction interval (numeric questions) or not matching (qualitative):',
      '',
      ...table(
        ['Item', 'Reference', 'Panel'],
        r.mismatches.map((m) => [link(m), text(m.reference), text(m.outcome)]),
      ),
    );
  }
  return lines;
}

function council(c: ReportCouncil): string[] {
  return [
    '## Council',
    '',
    `${c.items} complete items, ${c.ballots} parsed rankings; unparsed rankings: ${rate(c.unparsedRankings)}.`,
    'Rank 1 is best. Self-preference is the mean of (own rank − the others’ mean rank for that answer): negative means a model favours its own answer.',
    '',
    ...table(
      [
        'Model',
        'Average rank (95 % CI)',
        'First place (95 % CI)',
        'Borda points (per item, 95 % CI)',
        'Self-preference (95 % CI)',
        'Against the next below',
      ],
      c.models.map((m) => [
        text(m.model),
        figure(m.averageRank),
        figure(m.firstPlaceShare),
        `${m.bordaPoints} (${figure(m.bordaPointsPerItem)})`,
        figure(m.selfPreference.difference),
        againstNext(m.overlapsNext),
      ]),
    ),
    ...leaderboard(c.leaderboardNote),
    '### Chairman',
    '',
    `Chairman failures: ${rate(c.chairman.failures)} of the items that reached the chairman.`,
    '',
    ...table(
      ['Chairman', 'Items', 'Failures'],
      c.chairman.byModel.map((m) => [text(m.model), String(m.items), String(m.failures)]),
    ),
    ...positionBias(c.positionBias),
    ...reference(c.reference),
  ];
}

function contest(title: string, v: ReportVote): string[] {
  return [
    `## ${title}`,
    '',
    `${v.items} complete items; invalid votes: ${rate(v.invalidVotes)}.`,
    `Ties at the top: ${rate(v.ties.tied)}; broken by ${v.ties.brokenBy.map((b) => `${text(b.category)} ${b.count}`).join(', ') || 'nothing'}.`,
    '',
    ...table(
      [
        'Model',
        'Items',
        'Wins',
        'Win rate (95 % CI)',
        'Tied first',
        'Wins by tiebreak',
        'Vote share (95 % CI)',
        'Against the next below',
      ],
      v.models.map((m) => [
        text(m.model),
        String(m.contests),
        String(m.wins),
        rate(m.winRate),
        String(m.tiedFirst),
        String(m.winsByTiebreak),
        rate(m.voteShare),
        againstNext(m.overlapsNext),
      ]),
    ),
    ...leaderboard(v.leaderboardNote),
    ...positionBias(v.positionBias),
    ...reference(v.reference),
  ];
}

function debate(d: ReportDebate): string[] {
  return [
    ...contest('Debate', d),
    '### Revisions',
    '',
    ...table(
      ['Model', 'Revisions', 'Revise', 'Stand', 'Merge', 'Unparsed'],
      d.revisions.map((r) => [
        text(r.model),
        String(r.revisions),
        rate(r.revise),
        rate(r.stand),
        rate(r.merge),
        rate(r.unparsed),
      ]),
    ),
    `Winner's own decision: ${distribution(d.winnerDecision)}.`,
    '',
    `Winning answer was revised or merged by its author: ${rate(d.winnerWasRevised)}. Debate votes once, on the revised answers, so the winner the first answers would have had is not observed.`,
    '',
  ];
}

function jury(j: ReportJury): string[] {
  const fleiss = j.fleissKappa;
  return [
    '## Jury',
    '',
    `${j.items} complete items; ${j.assessments.n} juror assessments, all five scores read in ${j.assessments.allScoresRead}, some scores in ${j.assessments.someScoresRead}, the verdict in ${j.assessments.verdictRead}.`,
    'Each part of an assessment is used where it was read: readable scores enter the score figures (means, α, leniency) even when the verdict could not be read, and a readable verdict enters the verdict figures (juror verdicts, Fleiss’ κ) even when a score could not be read. Parse failures count assessments with either part unread.',
    '',
    `- Final verdicts: ${distribution(j.verdicts)}`,
    `- Juror verdicts: ${distribution(j.jurorVerdicts)}`,
    `- Fleiss' κ on the jurors' verdicts: ${fleiss.value === null ? `— (${text(fleiss.note)})` : `${number(fleiss.value, 3)}${bracket(fleiss.interval)}`}${fleiss.reading ? ` — ${fleiss.reading}` : ''} (n = ${fleiss.n} items${fleiss.ratersPerItem ? `, ${fleiss.ratersPerItem.min}–${fleiss.ratersPerItem.max} jurors each` : ''})`,
    '',
    '### Dimensions',
    '',
    'Item mean: the mean over items of the panel’s mean score. Krippendorff’s α (interval scale): ≥ 0.800 reliable, ≥ 0.667 tentative, below that unreliable.',
    '',
    ...table(
      ['Dimension', 'Item mean (95 % CI)', 'Scores: mean ± SD (n)', 'α (95 % CI) (n items)', 'Reading'],
      j.dimensions.map((d) => [
        text(d.dimension),
        figure(d.itemMean),
        `${number(d.scores.mean)} ± ${number(d.scores.standardDeviation)} (${d.scores.n})`,
        d.alpha.value === null
          ? `— (${text(d.alpha.note)})`
          : `${number(d.alpha.value, 3)}${bracket(d.alpha.interval)} (${d.alpha.n})`,
        d.alpha.reading ?? '—',
      ]),
    ),
    ...table(
      ['Dimension', 'Score distribution'],
      j.dimensions.map((d) => [
        text(d.dimension),
        d.distribution.categories
          .filter((c) => c.count > 0)
          .map((c) => `${text(c.category)}: ${c.count}`)
          .join(', ') || '—',
      ]),
    ),
    '### Jurors',
    '',
    'Leniency: the juror’s mean score minus the panel’s on the same items (positive = more lenient), 95 % interval from its standard error.',
    '',
    ...table(
      ['Juror', 'Leniency (95 % CI)', 'Verdicts', 'Parse failures', 'Scores unread', 'Verdict unread'],
      j.jurors.map((r) => [
        text(r.juror),
        figure(r.leniency),
        distribution(r.verdicts),
        rate(r.parseFailures),
        rate(r.scoresUnread),
        rate(r.verdictUnread),
      ]),
    ),
    '### Most disagreement',
    '',
    ...table(
      ['Item', 'Verdicts (A/Rv/Rj)', 'Verdict split', 'Score spread', 'Final verdict'],
      j.mostDisagreement.map((d) => [
        link(d),
        `${d.verdicts.APPROVE}/${d.verdicts.REVISE}/${d.verdicts.REJECT}`,
        percent(d.verdictSplit),
        number(d.scoreSpread),
        text(d.finalVerdict),
      ]),
    ),
    ...reference(j.reference),
  ];
}

function delphi(d: ReportDelphi): string[] {
  return [
    '## Delphi',
    '',
    `${d.items} complete items (${d.numericItems} numeric, ${d.qualitativeItems} qualitative).`,
    '',
    `- Converged: ${rate(d.converged)}`,
    `- Round of convergence: mean ${number(d.roundsToConvergence.mean)}; ${distribution(d.roundsToConvergence.distribution)}`,
    `- Rounds run: ${distribution(d.rounds)}`,
    `- Final CV (numeric): median ${number(d.finalCv.p50, 3)}, 95th percentile ${number(d.finalCv.p95, 3)}, mean ${number(d.finalCv.mean, 3)}; ${distribution(d.finalCv.distribution)}`,
    `- Final agreement (qualitative): median ${percent(d.finalAgreement.p50)}, mean ${percent(d.finalAgreement.mean)}; ${distribution(d.finalAgreement.distribution)}`,
    '',
    '### Movement toward the median',
    '',
    ...table(
      [
        'Round',
        'Panelists',
        'Moved toward (95 % CI)',
        'Moved away (95 % CI)',
        'Share of distance closed (95 % CI)',
      ],
      d.movement.map((m) => [
        String(m.round),
        String(m.n),
        rate(m.movedTowardMedian),
        rate(m.movedAway),
        figure(m.distanceClosed),
      ]),
    ),
    ...reference(d.reference),
  ];
}

function models(list: ReportModelUsage[]): string[] {
  return table(
    [
      'Model',
      'Calls',
      'Failed (95 % CI)',
      'Parse failures (95 % CI)',
      'Prompt tokens',
      'Completion tokens',
      'Cost',
      'Latency p50 / p95 ms',
    ],
    list.map((m) => [
      text(m.model),
      String(m.calls),
      rate(m.failedCalls),
      rate(m.parseFailures),
      String(m.promptTokens),
      String(m.completionTokens),
      usd(m.costUsd),
      quantiles(m.latencyMs),
    ]),
  );
}

/** "How these numbers were computed": each test and interval method with its unit, resamples and seed. */
function methods(list: readonly ReportMethod[]): string[] {
  if (list.length === 0) return [];
  return [
    '## How these numbers were computed',
    '',
    ...table(
      ['Method', 'Used for', 'Unit', 'Resamples', 'Seed', 'How'],
      list.map((m) => [
        text(m.name),
        text(m.usedFor.join(', ')),
        text(m.unit),
        m.resamples === null ? '—' : String(m.resamples),
        m.seed === null ? '—' : `\`${text(m.seed)}\``,
        text(m.description),
      ]),
    ),
  ];
}

function usage(u: BatchUsageSummary): string[] {
  return [
    `- Items that ran: ${u.items}; tokens ${u.promptTokens} prompt + ${u.completionTokens} completion; cost ${usd(u.costUsd)}`,
    `- Cost per item: mean ${usd(u.costPerItemUsd.mean)}, p50 ${usd(u.costPerItemUsd.p50)}, p95 ${usd(u.costPerItemUsd.p95)} (n = ${u.costPerItemUsd.n})`,
    `- Item duration p50 / p95: ${quantiles(u.itemDurationMs, ' ms')}`,
    `- Call latency p50 / p95: ${quantiles(u.callLatencyMs, ' ms')}`,
    '',
  ];
}

export function reportMarkdown(report: BatchReport): string {
  const lines = [
    `# Batch report: ${report.name === null ? 'unnamed batch' : escapeMarkdown(report.name)}`,
    '',
    `Batch \`${report.batchId}\`, status ${report.status}${report.partial ? ' — **partial: items are still running**' : ''}; generated ${report.generatedAt}.`,
    `Items: ${report.items.total} (${report.items.complete} complete, ${report.items.failed} failed, ${report.items.cancelled} cancelled, ${report.items.unfinished} unfinished); modes: ${report.modes.join(', ')}.`,
    `Intervals: ${percent(report.method.confidence, 0)}, Wilson for rates with one case per item, item-cluster bootstrap for shares pooling several votes, answers or calls per item, percentile bootstrap (${report.method.resamples} resamples, seed: the batch id) for means (see How these numbers were computed).`,
    '',
  ];
  if (report.council) lines.push(...council(report.council));
  if (report.vote) lines.push(...contest('Vote', report.vote));
  if (report.debate) lines.push(...debate(report.debate));
  if (report.jury) lines.push(...jury(report.jury));
  if (report.delphi) lines.push(...delphi(report.delphi));
  // Graded batches: does the panel beat its best member (the library's Markdown, one per mode).
  for (const section of report.panelGain ?? []) {
    const [, ...rest] = panelGainMarkdown(section);
    lines.push(`## Panel gain: ${section.mode}`, ...rest);
  }
  lines.push('## Models', '', ...models(report.models), '## Usage', '', ...usage(report.usage));
  lines.push(
    '## Failures',
    '',
    `Failed items: ${rate(report.failures.failedItems)}; cancelled: ${report.failures.cancelledItems}.`,
    '',
    ...table(
      ['Error', 'Items', 'Examples'],
      report.failures.groups.map((g) => [text(g.error), String(g.count), g.examples.map(link).join(', ')]),
    ),
  );
  if (report.failures.otherFailedItems > 0)
    lines.push(`${report.failures.otherFailedItems} more failed items in other groups.`, '');
  lines.push(...methods(report.method.methods));
  // Notes are the server's own sentences, never model or user text.
  if (report.notes.length > 0) lines.push('## Notes', '', ...report.notes.map((n) => `- ${n}`), '');
  return `${lines.join('\n').trimEnd()}\n`;
}

export function comparisonMarkdown(c: BatchComparison): string {
  const name = (batch: BatchComparison['a']) =>
    batch.name === null ? 'unnamed' : escapeMarkdown(batch.name);
  const lines = [
    `# Batch comparison (${c.mode})`,
    '',
    `- A: ${name(c.a)} \`${c.a.batchId}\`, ${c.a.status}${c.a.partial ? ' (partial)' : ''}, ${c.a.items.complete}/${c.a.items.total} complete`,
    `- B: ${name(c.b)} \`${c.b.batchId}\`, ${c.b.status}${c.b.partial ? ' (partial)' : ''}, ${c.b.items.complete}/${c.b.items.total} complete`,
    `- Matched by ${c.matchedBy}: ${c.pairs} pairs, ${c.completePairs} with both items complete.`,
  ];
  if (c.unmatched.onlyInACount + c.unmatched.onlyInBCount > 0) {
    lines.push(
      `- Keys only in A: ${c.unmatched.onlyInACount}${c.unmatched.onlyInA.length ? ` (${c.unmatched.onlyInA.map(escapeMarkdown).join(', ')})` : ''}; only in B: ${c.unmatched.onlyInBCount}${c.unmatched.onlyInB.length ? ` (${c.unmatched.onlyInB.map(escapeMarkdown).join(', ')})` : ''}`,
    );
  }
  if (c.seats.some((s) => s.changed)) {
    lines.push(
      '',
      '## Seats',
      '',
      'Per-model figures are compared by seat (roster position); these seats held different models in A and B.',
      '',
      ...table(
        ['Seat', 'A', 'B'],
        c.seats
          .filter((s) => s.changed)
          .map((s) => [String(s.seat), text(s.a.join(', ') || '—'), text(s.b.join(', ') || '—')]),
      ),
    );
  }
  lines.push(
    '',
    '## Differences',
    '',
    `B − A over the complete pairs, ${percent(c.method.confidence, 0)} paired bootstrap intervals (${c.method.resamples} resamples).`,
    '',
    ...table(
      ['Measure', 'Of', 'A', 'B', 'B − A (95 % CI)'],
      c.differences.map((d) => [
        escapeMarkdown(d.measure),
        text(d.subject),
        number(d.a, 3),
        number(d.b, 3),
        figure(d.difference, 3),
      ]),
    ),
    '## Flipped outcomes',
    '',
    `Outcome: ${c.outcome}. Flipped: ${rate(c.flipped)}.`,
    '',
    ...table(
      ['A', 'B', 'Outcome in A', 'Outcome in B'],
      c.flips.map((f) => [link(f.a), link(f.b), text(f.outcomeA), text(f.outcomeB)]),
    ),
    ...(c.flipTests.length === 0
      ? []
      : [
          '### Change per outcome',
          '',
          'Exact McNemar test per outcome (pairs with it in A only against pairs with it in B only)' +
            (c.flipTests.length > 1 ? '; Holm-adjusted over the outcomes listed.' : '.'),
          '',
          ...table(
            [
              'Outcome',
              'In A only',
              'In B only',
              'p',
              ...(c.flipTests.length > 1 ? ['Holm-adjusted p'] : []),
            ],
            c.flipTests.map((t) => [
              text(t.outcome),
              String(t.onlyA),
              String(t.onlyB),
              number(t.pValue, 4),
              ...(c.flipTests.length > 1 ? [number(t.holmAdjustedPValue, 4)] : []),
            ]),
          ),
        ]),
    '## Usage',
    '',
    '### A',
    '',
    ...usage(c.usage.a),
    '### B',
    '',
    ...usage(c.usage.b),
    '### Per model',
    '',
    ...table(
      ['Model', 'Calls A / B', 'Cost A / B', 'Latency p50 A / B ms', 'Latency p95 A / B ms', 'Failed A / B'],
      c.models.map((m) => [
        text(m.model),
        `${m.a?.calls ?? 0} / ${m.b?.calls ?? 0}`,
        `${usd(m.a?.costUsd ?? null)} / ${usd(m.b?.costUsd ?? null)}`,
        `${number(m.a?.latencyMs.p50 ?? null, 0)} / ${number(m.b?.latencyMs.p50 ?? null, 0)}`,
        `${number(m.a?.latencyMs.p95 ?? null, 0)} / ${number(m.b?.latencyMs.p95 ?? null, 0)}`,
        `${m.a ? rate(m.a.failedCalls) : '—'} / ${m.b ? rate(m.b.failedCalls) : '—'}`,
      ]),
    ),
    ...methods(c.method.methods),
  );
  if (c.notes.length > 0) lines.push('## Notes', '', ...c.notes.map((n) => `- ${n}`), '');
  return `${lines.join('\n').trimEnd()}\n`;
}
