import type {
  GainTest,
  GradedAccuracy,
  PairedAccuracyDifference,
  PanelGainSection,
  PerCorrect,
  ReportFigure,
  ReportMethod,
  ReportRate,
} from '@conclave/contracts';
import { escapeMarkdown, markdownTable } from '@conclave/outcomes';

/**
 * The panel-gain section in words a reader cannot misread ("the panel was right on 78.4 % of
 * items, its best member alone on 70.0 %: +8.4 points [+4.0, +12.7]"), and as Markdown in the
 * style of the batch report's (apps/gateway/src/batches/report-markdown.ts). Pure functions; model
 * ids are escaped in the Markdown only (the sentences are plain text).
 */

const MINUS = '\u2212';

const percent = (value: number): string => `${(value * 100).toFixed(1)} %`;

/** A difference in proportion units as signed points: 0.084 → "+8.4", −0.02 → "−2.0". */
export function signedPoints(value: number): string {
  const points = Math.round(value * 1000) / 10;
  if (points === 0) return '0.0';
  return `${points > 0 ? '+' : MINUS}${Math.abs(points).toFixed(1)}`;
}

const signed = (value: number, digits: number): string => {
  const rounded = Number(value.toFixed(digits));
  if (rounded === 0) return (0).toFixed(digits);
  return `${rounded > 0 ? '+' : MINUS}${Math.abs(rounded).toFixed(digits)}`;
};

const plain = (value: number, digits: number): string =>
  value < 0 ? `${MINUS}${Math.abs(value).toFixed(digits)}` : value.toFixed(digits);

/** "78.4 % (235 of 300)", or "no value (reason)". */
function accuracyText(a: GradedAccuracy | ReportRate): string {
  if (a.value === null) return `no accuracy (${a.note ?? 'no data'})`;
  return `${percent(a.value)} (${a.count} of ${a.n})`;
}

/** " [+4.0, +12.7]" or " (no interval: why)". */
function pointsInterval(f: ReportFigure): string {
  if (f.interval === null) return ` (no interval: ${f.note ?? 'none computed'})`;
  return ` [${signedPoints(f.interval.lower)}, ${signedPoints(f.interval.upper)}]`;
}

const pValue = (p: number): string => (p < 0.001 ? '< 0.001' : `= ${p.toFixed(3)}`);

/** The test in one sentence: the discordant items, p and its Holm adjustment, or why not run. */
export function testSentence(d: PairedAccuracyDifference): string {
  const t: GainTest = d.test;
  if (!t.run) return `No test of ${d.a} against ${d.b}: ${t.reason ?? 'not run'}.`;
  const holm = t.holmAdjustedPValue === null ? '' : `, Holm-adjusted p ${pValue(t.holmAdjustedPValue)}`;
  return (
    `Exact McNemar test on the ${d.onlyA + d.onlyB} items where exactly one of the two was right ` +
    `(${d.a} alone on ${d.onlyA}, the other alone on ${d.onlyB}): p ${pValue(t.pValue ?? 1)}${holm}.`
  );
}

/** "the panel was right on X, B on Y: +d points [l, u]". */
export function differenceSentence(
  d: PairedAccuracyDifference,
  a: GradedAccuracy,
  b: GradedAccuracy,
): string {
  if (a.value === null || b.value === null || d.difference.value === null) {
    const why = a.value === null ? a.note : b.value === null ? b.note : d.difference.note;
    return `${capital(d.a)} cannot be compared with ${d.b}: ${why ?? 'no data'}.`;
  }
  return (
    `${capital(d.a)} was right on ${percent(a.value)} of items (${a.count} of ${a.n}), ` +
    `${d.b} on ${percent(b.value)} (${b.count} of ${b.n}): ` +
    `${signedPoints(d.difference.value)} points${pointsInterval(d.difference)}.`
  );
}

const capital = (s: string): string => s.charAt(0).toUpperCase() + s.slice(1);

function perCorrectText(label: string, p: PerCorrect, format: (v: number) => string): string {
  const f = p.value;
  if (f.value === null) return `${label}: none (${f.note ?? 'no data'})`;
  const interval = f.interval
    ? ` [${format(f.interval.lower)}, ${format(f.interval.upper)}]`
    : ` (no interval: ${f.note ?? 'none computed'})`;
  return `${label} ${format(f.value)}${interval}`;
}

const usd = (v: number): string => (v !== 0 && v < 0.01 ? `$${v.toPrecision(2)}` : `$${v.toFixed(4)}`);
const tokens = (v: number): string => String(Math.round(v));
const seconds = (v: number): string => `${(v / 1000).toFixed(1)} s`;

/** The section's findings as plain sentences, the headline first. */
export function panelGainSentences(section: PanelGainSection): string[] {
  if (section.reason !== null) {
    return [`No panel gain can be reported: ${section.reason} (${section.items} items).`];
  }
  const sentences: string[] = [];
  const interval = `${Math.round(section.method.confidence * 100)} %`;
  if (section.best !== null && section.panelMinusBest !== null) {
    sentences.push(differenceSentence(section.panelMinusBest, section.panel, section.best.accuracy));
    sentences.push(testSentence(section.panelMinusBest));
    const held = section.heldOutBest;
    if (held !== null) {
      sentences.push(differenceSentence(held.panelMinus, section.panel, held.accuracy));
      sentences.push(testSentence(held.panelMinus));
    }
  } else {
    sentences.push(`The panel was right on ${accuracyText(section.panel)}; no member answered on its own.`);
  }
  sentences.push(differenceSentence(section.panelMinusMajority, section.panel, section.majority.accuracy));
  sentences.push(testSentence(section.panelMinusMajority));
  sentences.push(
    `Differences are in percentage points; intervals are ${interval}, paired over the same ` +
      `${section.items === 1 ? 'item' : `${section.items} items`}. ` +
      `Unreadable answers count as not correct: the panel’s final answer was unreadable on ` +
      `${section.panel.unreadable} and missing on ${section.panel.missing}.`,
  );
  const r = section.revision;
  if (r !== null) {
    if (r.answers === 0) sentences.push('No member gave both a first and a revised answer.');
    else {
      const change =
        r.change.value === null ? '' : `: ${signedPoints(r.change.value)} points${pointsInterval(r.change)}`;
      sentences.push(
        `Revisions fixed ${r.fixed} wrong first answers and broke ${r.broke} right ones (of ${r.answers} ` +
          `revised answers on ${r.items} items): ${accuracyText(r.before)} of the first answers were right, ` +
          `${accuracyText(r.after)} of the revised ones${change}.`,
      );
    }
  }
  const d = section.delphi;
  if (d !== null) {
    if (d.items === 0 || d.firstMedianError.value === null || d.finalError.value === null) {
      sentences.push('No Delphi item has both a first-round median and a final value to compare.');
    } else {
      const change = d.change.value;
      const changeText =
        change === null
          ? ''
          : `: ${signed(change, 3)}${d.change.interval ? ` [${signed(d.change.interval.lower, 3)}, ${signed(d.change.interval.upper, 3)}]` : ` (no interval: ${d.change.note ?? 'none'})`}`;
      sentences.push(
        `The first round’s median was off by ${plain(d.firstMedianError.value, 3)} on average, ` +
          `the final value by ${plain(d.finalError.value, 3)}${changeText} (${d.items} items; ` +
          `${d.closer} closer, ${d.further} further, ${d.unchanged} unchanged).`,
      );
    }
  }
  const c = section.perCorrect;
  sentences.push(
    `Per correct answer of the panel: ${perCorrectText('cost', c.costUsd, usd)}; ` +
      `${perCorrectText('tokens', c.tokens, tokens)}; ${perCorrectText('latency', c.latencyMs, seconds)}.`,
  );
  return sentences;
}

function rateCell(a: GradedAccuracy | ReportRate): string {
  if (a.value === null) return `— (${escapeMarkdown(a.note ?? 'no data')})`;
  const interval = a.interval ? ` [${percent(a.interval.lower)}, ${percent(a.interval.upper)}]` : '';
  return `${percent(a.value)}${interval}`;
}

function pointsCell(f: ReportFigure): string {
  if (f.value === null) return `— (${escapeMarkdown(f.note ?? 'no data')})`;
  const interval = f.interval
    ? ` [${signedPoints(f.interval.lower)}, ${signedPoints(f.interval.upper)}]`
    : ` (${escapeMarkdown(f.note ?? 'no interval')})`;
  return `${signedPoints(f.value)}${interval}`;
}

function testCell(t: GainTest): string {
  if (!t.run) return `not run (${escapeMarkdown(t.reason ?? '')})`;
  const holm = t.holmAdjustedPValue === null ? '' : `; Holm p ${pValue(t.holmAdjustedPValue)}`;
  return `p ${pValue(t.pValue ?? 1)}${holm}`;
}

function methodLines(list: readonly ReportMethod[]): string[] {
  if (list.length === 0) return [];
  return [
    '### How these numbers were computed',
    '',
    ...list.map(
      (m) =>
        `- **${escapeMarkdown(m.name)}** (${escapeMarkdown(m.usedFor.join('; '))}; unit: ${escapeMarkdown(m.unit)}` +
        `${m.resamples === null ? '' : `; ${m.resamples} resamples, seed ${escapeMarkdown(m.seed ?? '')}`}): ` +
        escapeMarkdown(m.description),
    ),
    '',
  ];
}

/** The section as Markdown lines (a `## Panel gain` heading, sentences, tables, methods, notes). */
export function panelGainMarkdown(section: PanelGainSection): string[] {
  const lines: string[] = ['## Panel gain', ''];
  for (const sentence of panelGainSentences(section)) lines.push(escapeMarkdown(sentence), '');
  if (section.reason !== null) return lines;
  const answerRow = (label: string, a: GradedAccuracy): string[] => [
    label,
    rateCell(a),
    `${a.count}/${a.n}`,
    String(a.unreadable),
    String(a.missing),
  ];
  lines.push(
    ...markdownTable(
      ['Answer', 'Accuracy [95 % CI]', 'Correct', 'Unreadable', 'Missing'],
      [
        ...section.members.map((m) =>
          answerRow(
            `Seat ${m.seat}: ${escapeMarkdown(m.model)}${section.best?.seat === m.seat ? ' (best)' : ''}`,
            m.accuracy,
          ),
        ),
        ...(section.heldOutBest
          ? [
              answerRow(
                section.heldOutBest.pickedOnOdd === section.heldOutBest.pickedOnEven
                  ? `Best member picked on the other half (seat ${section.heldOutBest.pickedOnOdd} both times)`
                  : `Best member picked on the other half (seats ${section.heldOutBest.pickedOnEven} and ${section.heldOutBest.pickedOnOdd})`,
                section.heldOutBest.accuracy,
              ),
            ]
          : []),
        answerRow('Majority of the members’ own answers', section.majority.accuracy),
        answerRow('**Panel (final answer)**', section.panel),
      ],
    ),
  );
  const differences = [
    section.panelMinusBest,
    section.heldOutBest?.panelMinus ?? null,
    section.panelMinusMajority,
  ].filter((d): d is PairedAccuracyDifference => d !== null);
  lines.push(
    ...markdownTable(
      ['Comparison', 'Difference, points [95 % CI]', 'Only panel right', 'Only other right', 'Exact test'],
      differences.map((d) => [
        `Panel − ${escapeMarkdown(d.b.replace(/^its |^a /, ''))}`,
        pointsCell(d.difference),
        String(d.onlyA),
        String(d.onlyB),
        testCell(d.test),
      ]),
    ),
  );
  const r = section.revision;
  if (r !== null) {
    lines.push(
      '### Debate revisions',
      '',
      ...markdownTable(
        ['Before revision', 'After revision', 'Change, points', 'Fixed', 'Broke', 'Answers (items)'],
        [
          [
            rateCell(r.before),
            rateCell(r.after),
            pointsCell(r.change),
            String(r.fixed),
            String(r.broke),
            `${r.answers} (${r.items})`,
          ],
        ],
      ),
    );
  }
  const d = section.delphi;
  if (d !== null) {
    const cell = (f: ReportFigure) =>
      f.value === null
        ? `— (${escapeMarkdown(f.note ?? 'no data')})`
        : `${plain(f.value, 3)}${f.interval ? ` [${plain(f.interval.lower, 3)}, ${plain(f.interval.upper, 3)}]` : ''}`;
    lines.push(
      '### Delphi: error of the first-round median against the final value',
      '',
      ...markdownTable(
        [
          'First-round median error',
          'Final error',
          'Change (final − first)',
          'Closer',
          'Further',
          'Unchanged',
          'Items',
        ],
        [
          [
            cell(d.firstMedianError),
            cell(d.finalError),
            cell(d.change),
            String(d.closer),
            String(d.further),
            String(d.unchanged),
            String(d.items),
          ],
        ],
      ),
    );
  }
  const c = section.perCorrect;
  const perCell = (p: PerCorrect, format: (v: number) => string) =>
    p.value.value === null
      ? `— (${escapeMarkdown(p.value.note ?? 'no data')})`
      : escapeMarkdown(
          `${format(p.value.value)}${p.value.interval ? ` [${format(p.value.interval.lower)}, ${format(p.value.interval.upper)}]` : ''}`,
        );
  lines.push(
    '### Per correct answer of the panel',
    '',
    ...markdownTable(
      ['Cost', 'Tokens', 'Latency'],
      [[perCell(c.costUsd, usd), perCell(c.tokens, tokens), perCell(c.latencyMs, seconds)]],
    ),
  );
  lines.push(...methodLines(section.method.methods));
  if (section.notes.length > 0) {
    lines.push('### Notes', '', ...section.notes.map((n) => `- ${escapeMarkdown(n)}`), '');
  }
  return lines;
}
