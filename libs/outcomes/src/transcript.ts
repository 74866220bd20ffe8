import { isTerminalStatus, type DeliberationView } from '@conclave/contracts';
import { modeFacts } from '@conclave/deliberation/facts';
import type { AnyResult } from './final-text';
import { fenced, figure, inline, table, usd } from './markdown';
import { outcomeOf } from './outcome';
import { MODE_SECTIONS } from './transcript-modes';

/** A stage's name as code (they are identifiers such as `round_2`); anything else escaped. */
const stageName = (stage: string): string => (/^[a-z0-9_]+$/.test(stage) ? `\`${stage}\`` : inline(stage));

/**
 * A deliberation's full transcript as Markdown: the question when given (the view does not hold
 * it), every stage with each model's text under its name, rankings, votes, scores or rounds, the
 * final text or why there is none, the failures and the usage per call. Model-written text sits in
 * fenced blocks it cannot close; names and error texts are escaped onto one line.
 */
export function transcriptMarkdown(view: DeliberationView, options: { question?: string } = {}): string {
  const result = (view.result ?? {}) as AnyResult;
  const outcome = outcomeOf(view, { web: '', transcript: '' });
  const attributed = !modeFacts(view.mode)?.anonymousWhileRunning || isTerminalStatus(view.status);
  const lines: string[] = [
    `# ${modeFacts(view.mode)?.title ?? inline(view.mode)} deliberation${result.title ? `: ${inline(result.title)}` : ''}`,
    '',
    `- Status: ${view.status}${outcome.partial ? ' (partial)' : ''}`,
    `- Message: ${view.messageId}; conversation: ${view.conversationId}`,
    `- Started ${view.createdAt}${view.completedAt ? `, ended ${view.completedAt}` : ''}${view.simulated ? '; simulated models' : ''}`,
    ...(view.error ? [`- Error: ${inline(view.error)}`] : []),
    ...(outcome.degraded ? [`- Degraded: ${inline(outcome.degraded.summary)}`] : []),
    '',
  ];
  if (options.question !== undefined) lines.push('## Question', '', fenced(options.question), '');
  lines.push(...MODE_SECTIONS[view.mode](result, view, attributed));

  const kept = outcome.partialStage;
  if (kept) {
    lines.push(
      `## Kept from the unfinished stage ${stageName(kept.stage)}`,
      '',
      `The deliberation ${kept.reason === 'cancelled' ? 'was cancelled' : 'failed'}${kept.why ? ` (${inline(kept.why.replace(/\.$/, ''))})` : ''} ` +
        'before this stage was complete.' +
        (kept.answers.length > 0
          ? ' These answers finished and are kept; none of them is a final answer.'
          : ''),
      '',
    );
    for (const answer of kept.answers) {
      lines.push(`### ${inline(answer.model)} (${stageName(answer.stage)})`, '', fenced(answer.content), '');
    }
    if (kept.answers.length === 0) lines.push('No call of this stage had finished.', '');
    if (kept.cut.length > 0) {
      lines.push(
        'Not finished:',
        '',
        ...table(
          ['Model', 'Role', 'Why'],
          kept.cut.map((c) => [inline(c.model), inline(c.role), `${c.kind}: ${inline(c.why)}`]),
        ),
      );
    }
  }

  lines.push('## Final answer', '');
  if (outcome.finalText !== null) {
    lines.push(
      `By the ${inline(outcome.finalAuthor?.role)} ${inline(outcome.finalAuthor?.model)}:`,
      '',
      fenced(outcome.finalText),
      '',
    );
  } else if (outcome.finalAuthor?.failed) {
    lines.push(
      `None: the ${inline(outcome.finalAuthor.role)} ${inline(outcome.finalAuthor.model)} failed (${inline(outcome.finalAuthor.error)}).`,
      '',
    );
  } else {
    lines.push(
      isTerminalStatus(view.status)
        ? `None (the deliberation is ${view.status}).`
        : 'Not yet: the deliberation is still running.',
      '',
    );
  }
  if (outcome.enoughAnswered === false) lines.push("Not enough panelists answered for the mode's rules.", '');

  lines.push(
    '## Failures',
    '',
    ...table(
      ['Model', 'Role', 'Stage', 'Error'],
      outcome.failures.map((f) => [inline(f.model), inline(f.role), stageName(f.stage), inline(f.error)]),
    ),
  );
  const u = view.usage;
  lines.push(
    '## Usage',
    '',
    `Total: ${u.promptTokens} prompt + ${u.completionTokens} completion tokens, ${usd(u.costUsd)}.`,
    '',
    ...table(
      ['Stage', 'Model', 'OK', 'Time (ms)', 'Prompt tokens', 'Completion tokens', 'Cost'],
      view.calls.map((c) => [
        stageName(c.stage),
        inline(c.model),
        c.ok ? (c.truncated ? 'yes (cut at the length limit)' : 'yes') : 'no',
        figure(c.responseTimeMs),
        figure(c.promptTokens),
        figure(c.completionTokens),
        c.costUsd === null ? '—' : usd(c.costUsd),
      ]),
    ),
  );
  return lines.join('\n');
}
