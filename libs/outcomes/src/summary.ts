import { figure, usd } from './markdown';
import type { DeliberationOutcome, VotingSummary } from './outcome.types';

/** Well under what desktop MCP clients accept from a tool (Claude Desktop cuts far longer output). */
export const SUMMARY_MAX_LENGTH = 6000;
const MAX_FAILURE_LINES = 5;

const FINAL_NAMES: Record<string, string> = {
  chairman: "chairman's synthesis",
  winner: 'winning answer',
  foreman: "foreman's verdict report",
  facilitator: "facilitator's report",
};

/** Why there is no final text, plainly. */
function noFinalText(o: DeliberationOutcome): string {
  const author = o.finalAuthor;
  if (author?.failed && o.status !== 'cancelled') {
    return `No final answer: the ${author.role} ${author.model} failed (${author.error ?? 'error'}), so there is no ${FINAL_NAMES[author.role] ?? 'final text'}.`;
  }
  switch (o.status) {
    case 'queued':
    case 'running':
      return `No final answer yet: the ${o.mode} deliberation is still ${o.status}.`;
    case 'cancelled':
      return `No final answer: the ${o.mode} deliberation was cancelled before it was written.`;
    case 'failed':
      return `No final answer: the ${o.mode} deliberation failed${o.error ? ` (${o.error})` : ''}.`;
    default:
      return 'No final answer.';
  }
}

/** What a cancelled or failed run kept of the stage it never finished: each finished answer, named. */
function keptAnswers(o: DeliberationOutcome): string {
  const kept = o.partialStage;
  if (!kept || kept.answers.length === 0) return '';
  const where = kept.stage ? ` of its unfinished stage ${kept.stage}` : '';
  const blocks = kept.answers.map((a) => `--- ${a.model} (${a.stage}) ---\n${a.content}`);
  return (
    `\n\nKept${where} (${kept.answers.length} finished answer${kept.answers.length === 1 ? '' : 's'}; ` +
    `none of them is a final answer):\n\n${blocks.join('\n\n')}\n`
  );
}

function votingLines(v: VotingSummary): string[] {
  const lines: string[] = [];
  if (v.winner) {
    const tiebreak = v.tiebreak
      ? ` after a tie, broken ${v.tiebreak.method === 'chairman' ? `by the chairman ${v.tiebreak.model ?? ''}`.trim() : 'alphabetically'}`
      : '';
    lines.push(
      `Winner: ${v.winner.model} with ${v.winner.votes} of ${v.winner.totalVotes} votes${tiebreak}.`,
    );
  }
  if (v.tally.length > 0) {
    lines.push(
      `Tally: ${v.tally.map((t) => `${t.model ?? t.label} ${t.votes}`).join(', ')} (${v.invalidVotes} unreadable).`,
    );
  }
  return lines;
}

function modeLines(o: DeliberationOutcome): string[] {
  if (o.council && o.council.aggregateRanking.length > 0) {
    return [
      `Aggregate ranking: ${o.council.aggregateRanking.map((r, i) => `${i + 1}. ${r.model} (average ${figure(r.averageRank)})`).join(', ')}.`,
    ];
  }
  if (o.vote) return votingLines(o.vote);
  if (o.debate) {
    const r = o.debate.revisions;
    return [
      ...(r
        ? [
            `Revisions: ${r.revised} revised, ${r.stood} stood, ${r.merged} merged, ${r.unreadable} unreadable.`,
          ]
        : []),
      ...votingLines(o.debate),
    ];
  }
  if (o.jury) {
    const j = o.jury;
    const lines: string[] = [];
    if (j.finalVerdict || j.majorityVerdict) {
      lines.push(
        `Verdict: ${j.finalVerdict ?? j.majorityVerdict}${j.finalVerdict ? ' (foreman)' : ' (jurors’ majority)'}` +
          (j.tally
            ? `; jurors: approve ${j.tally.approve}, revise ${j.tally.revise}, reject ${j.tally.reject}.`
            : '.'),
      );
    }
    if (j.dimensionMeans) {
      lines.push(
        `Mean scores: ${Object.entries(j.dimensionMeans)
          .map(([d, v]) => `${d} ${figure(v)}`)
          .join(', ')}.`,
      );
    }
    return lines;
  }
  if (o.delphi && o.delphi.rounds.length > 0) {
    const d = o.delphi;
    const converged = d.converged ? `converged in round ${d.convergenceRound}` : 'not converged';
    const value =
      d.finalValue === null
        ? ''
        : `; final value ${typeof d.finalValue === 'number' ? figure(d.finalValue) : d.finalValue}`;
    const interval = d.interval
      ? ` (median ${figure(d.median)}, 95% interval ${figure(d.interval.low)} to ${figure(d.interval.high)})`
      : '';
    return [`Delphi: ${d.rounds.length} round(s), ${converged}${value}${interval}.`];
  }
  return [];
}

function statusLines(o: DeliberationOutcome): string[] {
  const answered = o.panelists.filter((p) => !p.failed).length;
  const panel =
    o.panelists.length === 0
      ? 'no panelist has answered yet'
      : `${answered} of ${o.panelists.length} panelists answered without a failure`;
  const lines = [`Mode ${o.mode}, status ${o.status}; ${panel}.`];
  if (o.partial) lines.push('Partial result: see the failures below and the transcript.');
  if (o.enoughAnswered === false) lines.push("Not enough panelists answered for the mode's rules.");
  const shown = o.failures.slice(0, MAX_FAILURE_LINES);
  for (const f of shown) lines.push(`Failed: ${f.model} (${f.role}, ${f.stage}): ${f.error}`);
  if (o.failures.length > shown.length)
    lines.push(`… and ${o.failures.length - shown.length} more failures.`);
  return lines;
}

/** At most `length` UTF-16 units, never half a surrogate pair. */
function truncateAt(text: string, length: number): string {
  if (text.length <= length) return text;
  const cut = text.slice(0, Math.max(0, length));
  return /[\ud800-\udbff]$/.test(cut) ? cut.slice(0, -1) : cut;
}
const MAX_LINE = 300;

/**
 * The short text part of a tool result: the final answer (or why there is none), a few summary
 * lines, the web link and the transcript's URI; at most SUMMARY_MAX_LENGTH characters, the final
 * answer cut first, with a note pointing at the transcript.
 */
export function outcomeSummary(outcome: DeliberationOutcome): string {
  const u = outcome.usage;
  const tail = [
    '',
    ...[...statusLines(outcome), ...modeLines(outcome)].map((line) => truncateAt(line, MAX_LINE)),
    `Usage: ${u.promptTokens} prompt + ${u.completionTokens} completion tokens, ${usd(u.costUsd)}.`,
    `Web: ${outcome.links.web}`,
    `Full transcript (every answer, ranking, vote, score or estimate): ${outcome.links.transcript}`,
  ].join('\n');
  // Who is missing goes first, above the answer: a degraded run never reads as a whole one.
  const top = outcome.degraded
    ? `${truncateAt(`Degraded: ${outcome.degraded.summary}`, MAX_LINE * 2)}\n\n`
    : '';
  const head = outcome.finalText === null ? noFinalText(outcome) + keptAnswers(outcome) : outcome.finalText;
  if (top.length + head.length + tail.length <= SUMMARY_MAX_LENGTH) return top + head + tail;
  const note = `\n\n[… cut here: ${head.length} characters in all; the full text is in the transcript ${outcome.links.transcript}]`;
  const room = Math.max(0, SUMMARY_MAX_LENGTH - top.length - tail.length - note.length);
  return top + truncateAt(head, room) + note + tail;
}
