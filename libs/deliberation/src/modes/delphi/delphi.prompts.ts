import type { Confidence, NumericStats, QualitativeStats } from '@conclave/contracts';
import { createFence } from '../../shared/fence';

/*
 * Containment layer (shared/fence.ts): the question, the options, and every answer a model wrote
 * that another prompt shows (the distribution, a panelist's own previous answer, the majority)
 * are fenced and declared data. Figures the server computed are not.
 */

export const CLASSIFY_PROMPT_MARKER = 'Classify the following question for a Delphi estimation exercise.';
export const NUMERIC_ROUND1_MARKER = 'You are participating in a Delphi estimation exercise.';
export const QUALITATIVE_ROUND1_MARKER = 'You are participating in a Delphi consensus exercise.';
export const DELPHI_SYNTHESIS_PROMPT_MARKER = 'You are the facilitator for a Delphi exercise';

/** Figures as a panelist reads them: no float noise, thousands separated. */
export function formatNumber(value: number | null): string {
  if (value === null) return 'undefined (mean is 0)';
  const rounded = Math.abs(value) >= 100 ? Math.round(value) : Math.round(value * 1000) / 1000;
  return rounded.toLocaleString('en-US', { maximumFractionDigits: 3 });
}

export function buildClassifyPrompt(userQuery: string, seed = ''): string {
  const fence = createFence([userQuery], `${seed}:classify`);
  return `${CLASSIFY_PROMPT_MARKER}

${fence.notice}

QUESTION:
${fence.wrap('QUESTION', userQuery)}

Determine:
1. Is this a NUMERIC question (expects a number, quantity, estimate, percentage, date, or measurable value)?
2. Or is this a QUALITATIVE question (expects a category, recommendation, choice, or opinion)?

If QUALITATIVE, suggest 3-6 answer options that cover the reasonable range of responses.

Format:
TYPE: [NUMERIC|QUALITATIVE]
OPTIONS: [comma-separated options, or "N/A" if NUMERIC]
REASONING: [one sentence explaining your classification]`;
}

export function buildNumericRound1Prompt(userQuery: string, seed = ''): string {
  const fence = createFence([userQuery], `${seed}:round1`);
  return `${NUMERIC_ROUND1_MARKER} You will provide your independent estimate for a question. In later rounds, you will see aggregate statistics from all participants (but never individual responses).

${fence.notice}

QUESTION:
${fence.wrap('QUESTION', userQuery)}

Provide:
1. Your numeric estimate
2. Your confidence level (LOW/MEDIUM/HIGH)
3. Your reasoning (2-4 sentences)

Format:
ESTIMATE: [number]
CONFIDENCE: [LOW|MEDIUM|HIGH]
REASONING: [your reasoning]`;
}

export function buildQualitativeRound1Prompt(
  userQuery: string,
  options: readonly string[] | null,
  seed = '',
): string {
  const numbered = options && options.length > 0 ? options.map((o, i) => `${i + 1}. ${o}`).join('\n') : null;
  const fence = createFence(numbered === null ? [userQuery] : [userQuery, numbered], `${seed}:round1`);
  const list =
    numbered === null
      ? '(no options could be prepared: give your own short answer)'
      : fence.wrap('OPTIONS', numbered);
  return `${QUALITATIVE_ROUND1_MARKER} You will provide your independent assessment. In later rounds, you will see aggregate results from all participants (but never individual responses).

${fence.notice}

QUESTION:
${fence.wrap('QUESTION', userQuery)}

Choose from these options:
${list}

Provide:
1. Your answer/recommendation
2. Your confidence level (LOW/MEDIUM/HIGH)
3. Your reasoning (2-4 sentences)

Format:
ANSWER: [your answer or option number]
CONFIDENCE: [LOW|MEDIUM|HIGH]
REASONING: [your reasoning]`;
}

const confidenceLine = (stats: { confidenceCounts: { low: number; medium: number; high: number } }) =>
  `${stats.confidenceCounts.low} LOW, ${stats.confidenceCounts.medium} MEDIUM, ${stats.confidenceCounts.high} HIGH`;

export function buildNumericRoundPrompt(input: {
  round: number;
  maxRounds: number;
  userQuery: string;
  previousEstimate: number | null;
  previousConfidence: Confidence;
  participantCount: number;
  stats: NumericStats;
  seed?: string;
}): string {
  const { stats } = input;
  const fence = createFence([input.userQuery], `${input.seed ?? ''}:round${input.round}`);
  return `DELPHI ROUND ${input.round} of ${input.maxRounds}

${fence.notice}

QUESTION: ${fence.wrap('QUESTION', input.userQuery)}

YOUR PREVIOUS ESTIMATE: ${input.previousEstimate === null ? 'none (it could not be read as a number)' : formatNumber(input.previousEstimate)}
YOUR PREVIOUS CONFIDENCE: ${input.previousConfidence}

AGGREGATE STATISTICS FROM ALL ${input.participantCount} PARTICIPANTS (Round ${input.round - 1}):
- Mean: ${formatNumber(stats.mean)}
- Median: ${formatNumber(stats.median)}
- Standard Deviation: ${formatNumber(stats.stdDev)}
- Range: ${formatNumber(stats.min)} — ${formatNumber(stats.max)}
- Coefficient of Variation: ${formatNumber(stats.cv)}
- Confidence Distribution: ${confidenceLine(stats)}

You may revise your estimate based on these aggregates, or maintain your position if you believe you are correct.

ESTIMATE: [number]
CONFIDENCE: [LOW|MEDIUM|HIGH]
REASONING: [why you revised or maintained — reference the aggregates]`;
}

export function buildQualitativeRoundPrompt(input: {
  round: number;
  maxRounds: number;
  userQuery: string;
  previousAnswer: string | null;
  participantCount: number;
  stats: QualitativeStats;
  seed?: string;
}): string {
  const { stats } = input;
  const distribution = stats.distribution
    .map((d) => `  ${d.answer}: ${d.count} participants (${d.percentage}%)`)
    .join('\n');
  const previous = input.previousAnswer;
  const fence = createFence(
    [input.userQuery, distribution, ...(previous === null ? [] : [previous])],
    `${input.seed ?? ''}:round${input.round}`,
  );
  return `DELPHI ROUND ${input.round} of ${input.maxRounds}

${fence.notice}

QUESTION: ${fence.wrap('QUESTION', input.userQuery)}

YOUR PREVIOUS ANSWER: ${previous === null ? 'none (it could not be read)' : fence.wrap('ANSWER', previous)}

AGGREGATE RESULTS FROM ALL ${input.participantCount} PARTICIPANTS (Round ${input.round - 1}):
- Distribution:
${fence.wrap('DISTRIBUTION', distribution)}
- Agreement Level: ${stats.agreementPercentage}%
- Confidence Distribution: ${confidenceLine(stats)}

You may revise your answer based on these aggregates, or maintain your position.

ANSWER: [your answer]
CONFIDENCE: [LOW|MEDIUM|HIGH]
REASONING: [why you revised or maintained — reference the distribution]`;
}

/** What 05-delphi.md §F wants the report to say about how the rounds went. */
export function synthesisNotes(
  rounds: readonly { roundNumber: number; stats: NumericStats | QualitativeStats }[],
  converged: boolean,
): string[] {
  const notes: string[] = [];
  if (converged && rounds.length === 1) {
    notes.push(
      'Consensus was immediate: the participants already agreed in Round 1, so no further rounds ' +
        'were run. Say so in the report.',
    );
  }
  const last = rounds.at(-1);
  if (last && 'highVariance' in last.stats && last.stats.highVariance) {
    notes.push(
      `Variance stayed high (CV above 2.0 in the final round, Round ${last.roundNumber}). Say in the ` +
        'report that the question may be too ambiguous, or that the participants may have ' +
        'fundamentally different interpretations of it.',
    );
  }
  return notes;
}

export function buildDelphiSynthesisPrompt(input: {
  userQuery: string;
  participantCount: number;
  rounds: { roundNumber: number; stats: NumericStats | QualitativeStats }[];
  converged: boolean;
  numeric: boolean;
  finalValue: number | string;
  median?: number;
  confidenceInterval?: { low: number; high: number };
  seed?: string;
}): string {
  const trajectory = input.rounds
    .map(({ roundNumber, stats }) => {
      const body =
        'mean' in stats
          ? `- Mean: ${formatNumber(stats.mean)}, Median: ${formatNumber(stats.median)}, StdDev: ${formatNumber(stats.stdDev)}, CV: ${formatNumber(stats.cv)}\n- Range: ${formatNumber(stats.min)} — ${formatNumber(stats.max)}`
          : `- Distribution: ${stats.distribution.map((d) => `${d.answer} ${d.count} (${d.percentage}%)`).join(', ')}\n- Agreement: ${stats.agreementPercentage}%`;
      const c = stats.confidenceCounts;
      return `Round ${roundNumber}:\n${body}\n- Confidence: ${c.low}L / ${c.medium}M / ${c.high}H`;
    })
    .join('\n');
  const finalAnswer = typeof input.finalValue === 'number' ? null : input.finalValue;
  const fence = createFence(
    [input.userQuery, trajectory, ...(finalAnswer === null ? [] : [finalAnswer])],
    `${input.seed ?? ''}:synthesis`,
  );
  const final =
    finalAnswer === null ? formatNumber(input.finalValue as number) : fence.wrap('ANSWER', finalAnswer);
  const extra =
    input.numeric && input.median !== undefined && input.confidenceInterval
      ? `\nFINAL MEDIAN: ${formatNumber(input.median)}\n95% CONFIDENCE INTERVAL OF THE MEAN: ${formatNumber(input.confidenceInterval.low)} — ${formatNumber(input.confidenceInterval.high)}`
      : '';
  const notes = synthesisNotes(input.rounds, input.converged);
  // The report template's "### Question" repeats the question; a placeholder stands there instead,
  // so that the question appears only inside its fence.
  return `${DELPHI_SYNTHESIS_PROMPT_MARKER} that ran ${input.rounds.length} rounds with ${input.participantCount} participants.

${fence.notice}

QUESTION: ${fence.wrap('QUESTION', input.userQuery)}

CONVERGENCE TRAJECTORY:
${fence.wrap('TRAJECTORY', trajectory)}

CONVERGENCE STATUS: ${input.converged ? 'Converged' : 'Max rounds reached'}
FINAL ${input.numeric ? 'CONSENSUS VALUE' : 'MAJORITY ANSWER'}: ${final}${extra}
${notes.map((note) => `\nNOTE: ${note}`).join('')}

Produce a Delphi Report:

## Delphi Consensus Report

### Question
[The question between the QUESTION markers above, verbatim, without the markers]

### Final Consensus
[The consensus value/answer with confidence interval if numeric]

### Convergence Analysis
[How opinions shifted across rounds. Did they converge smoothly or oscillate? Which rounds saw the biggest shifts?]

### Confidence Trajectory
[How participant confidence changed across rounds]

### Outlier Analysis
[Were there persistent outliers who never converged? What might their reasoning have been?]

### Reliability Assessment
[How reliable is this consensus? Consider: convergence speed, final CV/agreement, confidence levels, participant count]`;
}
