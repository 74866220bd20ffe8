import { DIMENSIONS, type DeliberationView, type LabelMap } from '@conclave/contracts';
import type { AnyResult } from './final-text';
import { fenced, figure, inline, table } from './markdown';
import { delphiEstimates } from './panelists';

/*
 * Each mode's stages as Markdown, from its result. Model-written text is always fenced, names
 * and labels always escaped (markdown.ts).
 */

type Section = (result: AnyResult, view: DeliberationView, attributed: boolean) => string[];

const answer = (heading: string, text: string): string[] => [heading, '', fenced(text), ''];

/** Where a stage's text is the final text: written once, under "Final answer". */
const FINAL_BELOW = '_Its text is the final answer, below._';

const byLabel = (labels: LabelMap | undefined, label: string | null): string =>
  label === null
    ? '— (unreadable)'
    : `${inline(labels && Object.hasOwn(labels, label) ? labels[label] : label)} (${inline(label)})`;

const labelOf = (labels: LabelMap | undefined, model: string): string => {
  const label = Object.keys(labels ?? {}).find((l) => labels?.[l] === model);
  return label ? ` — ${inline(label)}` : '';
};

function tallyTable(
  votes: { tallies: Record<string, number>; validVoteCount: number; invalidVoteCount: number } | undefined,
  labels: LabelMap | undefined,
): string[] {
  if (!votes) return [];
  const rows = Object.entries(votes.tallies)
    .sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))
    .map(([label, n]) => [byLabel(labels, label), String(n)]);
  return [
    '### Tally',
    '',
    ...table(['Answer', 'Votes'], rows),
    `Valid votes: ${votes.validVoteCount}; unreadable: ${votes.invalidVoteCount}.`,
    '',
  ];
}

function ballots(
  votes: { model: string; voteText: string; votedFor: string | null }[] | undefined,
  labels: LabelMap | undefined,
): string[] {
  return (votes ?? []).flatMap((v) =>
    answer(`### ${inline(v.model)} voted for ${byLabel(labels, v.votedFor)}`, v.voteText),
  );
}

const council: Section = (r) => {
  const labels = r.stage2Metadata?.labelToModel;
  const lines: string[] = [];
  if (r.stage1) {
    lines.push('## Stage 1 — answers', '');
    for (const s of r.stage1)
      lines.push(...answer(`### ${inline(s.model)}${labelOf(labels, s.model)}`, s.response));
  }
  if (r.stage2) {
    lines.push('## Stage 2 — rankings', '');
    for (const s of r.stage2) {
      const order = s.parsedRanking.map((l, i) => `${i + 1}. ${byLabel(labels, l)}`);
      lines.push(
        `### Ranking by ${inline(s.model)}`,
        '',
        ...(order.length ? order : ['_Could not be read._']),
        '',
      );
      lines.push(fenced(s.ranking), '');
    }
    const aggregate = r.stage2Metadata?.aggregateRankings ?? [];
    lines.push(
      '### Aggregate ranking',
      '',
      ...table(
        ['Position', 'Model', 'Average rank', 'Rankings'],
        aggregate.map((a, i) => [
          String(i + 1),
          inline(a.model),
          figure(a.averageRank),
          String(a.rankingsCount),
        ]),
      ),
    );
  }
  if (r.stage3) lines.push(`## Stage 3 — synthesis by ${inline(r.stage3.model)}`, '', FINAL_BELOW, '');
  return lines;
};

function winnerLines(
  winner:
    | {
        winnerModel: string;
        winnerLabel: string;
        voteCount: number;
        totalVotes: number;
        tiebroken: boolean;
        tiebreakerMethod?: string;
      }
    | undefined,
): string[] {
  if (!winner) return [];
  const tie = winner.tiebroken
    ? `, after a tie broken by ${inline(winner.tiebreakerMethod ?? 'alphabetical')} method`
    : '';
  return [
    `**Winner:** ${inline(winner.winnerModel)} (${inline(winner.winnerLabel)}) with ${winner.voteCount} of ${winner.totalVotes} votes${tie}.`,
    '',
  ];
}

const vote: Section = (r) => {
  const lines: string[] = [];
  if (r.stage1) {
    lines.push('## Answers', '');
    for (const s of r.stage1)
      lines.push(...answer(`### ${inline(s.model)}${labelOf(r.labelMap, s.model)}`, s.response));
  }
  if (r.votes) {
    lines.push('## Votes', '', ...ballots(r.votes.votes, r.labelMap), ...tallyTable(r.votes, r.labelMap));
  }
  if (r.tiebreak) {
    lines.push(
      ...answer(
        `## Tiebreak by ${inline(r.tiebreak.model)} (${inline(r.tiebreak.method)}): ${byLabel(r.labelMap, r.tiebreak.chosenLabel)}`,
        r.tiebreak.voteText,
      ),
    );
  }
  return [...lines, ...winnerLines(r.winner)];
};

const debate: Section = (r) => {
  const lines: string[] = [];
  if (r.round1) {
    lines.push('## Round 1 — answers', '');
    for (const s of r.round1)
      lines.push(...answer(`### ${inline(s.model)}${labelOf(r.round1LabelMap, s.model)}`, s.response));
  }
  if (r.revisions) {
    lines.push('## Round 2 — revisions', '');
    for (const v of r.revisions) {
      lines.push(`### ${inline(v.model)}: ${inline(v.decision ?? 'decision unreadable')}`, '');
      if (v.reasoning) lines.push('Reasoning:', '', fenced(v.reasoning), '');
      lines.push('Revised answer:', '', fenced(v.revisedResponse), '');
    }
    const s = r.revisionSummary;
    if (s)
      lines.push(
        `Revised ${s.revised}, stood ${s.stood}, merged ${s.merged}, unreadable ${s.parseFailed}.`,
        '',
      );
  }
  if (r.votes) {
    const labels = r.votes.revisedLabelToModel;
    lines.push('## Round 3 — votes', '', ...ballots(r.votes.votes, labels), ...tallyTable(r.votes, labels));
  }
  return [...lines, ...winnerLines(r.winner)];
};

/**
 * "; scores read from 1, verdicts from 2" when a juror answered without a readable score or verdict
 * (issue 36: the count of jurors that answered is not the count whose figures are in the summary);
 * nothing when every answer was read.
 */
function readCounts(jurors: AnyResult['jurors']): string {
  if (!jurors) return '';
  const scored = jurors.filter((j) => DIMENSIONS.some((d) => typeof j.scores[d] === 'number')).length;
  const verdicts = jurors.filter((j) => j.verdict !== null).length;
  return scored === jurors.length && verdicts === jurors.length
    ? ''
    : `; scores read from ${scored}, verdicts from ${verdicts}`;
}

const jury: Section = (r) => {
  const lines: string[] = [];
  if (r.presentation) {
    if (r.presentation.originalQuestion)
      lines.push(...answer('## Original question', r.presentation.originalQuestion));
    lines.push(...answer('## Content under evaluation', r.presentation.content));
  }
  if (r.jurors) {
    lines.push('## Juror assessments', '');
    lines.push(
      ...table(
        ['Juror', ...DIMENSIONS, 'Average', 'Verdict'],
        r.jurors.map((j) => [
          inline(j.model),
          ...DIMENSIONS.map((d) => figure(j.scores[d])),
          figure(j.average),
          inline(j.verdict ?? 'unreadable'),
        ]),
      ),
    );
    for (const j of r.jurors) lines.push(...answer(`### ${inline(j.model)}`, j.assessmentText));
  }
  const s = r.jurorSummary;
  if (s) {
    lines.push(
      '## Jurors’ summary',
      '',
      `Majority verdict: ${inline(s.majorityVerdict)} (approve ${s.voteTally.approve}, revise ${s.voteTally.revise}, reject ${s.voteTally.reject}); ${s.successfulJurors} of ${s.jurorCount} jurors answered${readCounts(r.jurors)}.`,
      '',
      ...table(
        ['Dimension', 'Mean', 'Min', 'Max'],
        DIMENSIONS.map((d) => [
          d,
          figure(s.dimensionAverages[d]),
          figure(s.dimensionRanges[d].min),
          figure(s.dimensionRanges[d].max),
        ]),
      ),
      ...(s.warnings ?? []).map((w) => `- Warning: ${inline(w)}`),
      '',
    );
  }
  if (r.foreman) {
    lines.push(
      `## Verdict by the foreman ${inline(r.foreman.model)}: ${inline(r.foreman.finalVerdict)}`,
      '',
      FINAL_BELOW,
      '',
    );
  }
  return lines;
};

const delphi: Section = (r, _view, attributed) => {
  const lines: string[] = [];
  if (r.classification) {
    lines.push(
      `## Classification: ${inline(r.classification.type)}`,
      '',
      ...(r.classification.options
        ? [`Options: ${r.classification.options.map(inline).join('; ')}`, '']
        : []),
      fenced(r.classification.reasoning),
      '',
    );
  }
  if (!attributed && r.rounds?.length) {
    lines.push(
      '_The panelists stay anonymous while the exercise runs; names are shown once it is over._',
      '',
    );
  }
  const estimates = delphiEstimates(r, attributed);
  for (const round of r.rounds ?? []) {
    const stats = round.stats;
    const figures =
      'median' in stats
        ? `median ${figure(stats.median)}, mean ${figure(stats.mean)}, range ${figure(stats.min)}–${figure(stats.max)}, CV ${figure(stats.cv)}`
        : `most common ${inline(stats.mode)} (${figure(stats.agreementPercentage)}% agreement)`;
    lines.push(
      `## Round ${round.roundNumber}${round.converged ? ' — converged' : ''}`,
      '',
      `${figures}.`,
      '',
    );
    const mine = estimates.filter((e) => e.round === round.roundNumber);
    lines.push(
      ...table(
        ['Participant', ...(attributed ? ['Model'] : []), 'Estimate', 'Confidence', 'Changed'],
        mine.map((e) => [
          String(e.participant),
          ...(attributed ? [inline(e.model)] : []),
          typeof e.value === 'number' ? figure(e.value) : inline(e.value),
          e.confidence,
          e.changed ? 'yes' : 'no',
        ]),
      ),
    );
    if (attributed)
      for (const e of mine)
        if (e.reasoning)
          lines.push(...answer(`### Reasoning of ${inline(e.model)}, round ${e.round}`, e.reasoning));
  }
  if (r.report) {
    const interval = r.report.confidenceInterval
      ? `; 95% interval ${figure(r.report.confidenceInterval.low)} to ${figure(r.report.confidenceInterval.high)}`
      : '';
    lines.push(
      `**Final value:** ${typeof r.report.finalValue === 'number' ? figure(r.report.finalValue) : inline(r.report.finalValue)}` +
        `${r.report.median !== undefined ? ` (median ${figure(r.report.median)}${interval})` : ''}; ${r.report.converged ? 'converged' : 'not converged'} after ${r.report.totalRounds} round(s).`,
      '',
      `## Delphi report by the facilitator ${inline(r.report.facilitatorModel)}`,
      '',
      FINAL_BELOW,
      '',
    );
  }
  return lines;
};

export const MODE_SECTIONS: Record<DeliberationView['mode'], Section> = {
  council,
  vote,
  debate,
  jury,
  delphi,
};
