import { DIMENSIONS, type Verdict } from '@conclave/contracts';
import { pick, type SimulatedResponder, type SimulationContext } from '@conclave/llm';
import { readFences } from '../../shared/fence';
import { simulatedQuality } from '../../shared/simulation';
import { EVALUATION_PROMPT_MARKER, FOREMAN_PROMPT_MARKER } from './jury.prompts';
import { verdictFromAverage } from './jury.verdict';

const JUSTIFICATIONS = [
  'Mostly sound, with a few claims that need support.',
  'Covers the main points but leaves out edge cases.',
  'Well organized and easy to follow.',
  'Stays on the task it was given.',
  'Gives concrete steps a reader can act on.',
  'Some statements are vague or unsupported.',
];

/** Flags that force a verdict; named so that the model id never contains a verdict keyword. */
const FORCED: Record<string, [number, number]> = { good: [8, 9], fair: [5, 6], poor: [2, 3] };

function contentOf(prompt: string): string {
  return readFences(prompt).blocks.find((b) => b.kind === 'CONTENT')?.text ?? '';
}

function scoresFor(ctx: SimulationContext, content: string): number[] {
  const forced = Object.keys(FORCED).find((flag) => ctx.flags.includes(flag));
  if (forced) {
    const [low, high] = FORCED[forced];
    return DIMENSIONS.map(() => (ctx.random() < 0.5 ? low : high));
  }
  const base = 2 + simulatedQuality(content, ctx.seed) * 7;
  return DIMENSIONS.map(() => Math.max(1, Math.min(10, Math.round(base + (ctx.random() - 0.5) * 4))));
}

const label = (dimension: string) => dimension.charAt(0).toUpperCase() + dimension.slice(1);

/**
 * A juror. Flags pick the format, so every parser path can be exercised from a request:
 * `inline`, `nopipes`, `noscores`, `partial` (three dimensions only), `noverdict`, `outofrange`,
 * `decimal`, `echo` (repeats the content's own verdict and score lines after its verdict); `good`, `fair`, `poor` force APPROVE, REVISE, REJECT.
 */
export const jurorResponder: SimulatedResponder = {
  kind: 'evaluation',
  matches: (prompt) => prompt.includes(EVALUATION_PROMPT_MARKER),
  respond: (ctx) => {
    const content = contentOf(ctx.prompt);
    const scores = scoresFor(ctx, content);
    const average = Math.round((scores.reduce((a, b) => a + b, 0) / scores.length) * 10) / 10;
    const verdict: Verdict = verdictFromAverage(average);
    const shown = scores.map((s, i) => {
      if (ctx.flags.includes('outofrange') && i === 0) return '11';
      if (ctx.flags.includes('decimal')) return `${s - 0.5}`;
      return String(s);
    });
    const lines: string[] = [`## Juror Assessment`, '', `[simulated assessment by ${ctx.model}]`, ''];
    if (!ctx.flags.includes('noscores')) {
      lines.push('### Scores', '');
      const scored = DIMENSIONS.map((d, i) => ({ d, i })).filter(
        ({ d }) => !ctx.flags.includes('partial') || (d !== 'completeness' && d !== 'actionability'),
      );
      if (ctx.flags.includes('inline')) {
        scored.forEach(({ d, i }) =>
          lines.push(`**${label(d)}**: ${shown[i]}/10 — ${pick(JUSTIFICATIONS, ctx.random)}`),
        );
      } else {
        const pipe = ctx.flags.includes('nopipes') ? '' : '|';
        lines.push(
          `${pipe} Dimension | Score | Justification ${pipe}`.trim(),
          `${pipe}-----------|:-----:|---------------${pipe}`,
        );
        scored.forEach(({ d, i }) =>
          lines.push(
            `${pipe} ${label(d)} | ${shown[i]} | ${pick(JUSTIFICATIONS, ctx.random)} ${pipe}`.trim(),
          ),
        );
        lines.push(`${pipe} **Average** | ${average} | ${pipe}`.trim());
      }
      lines.push('');
    }
    lines.push(
      '### Deliberation Notes',
      `Overall the content is ${verdict === 'APPROVE' ? 'solid' : verdict === 'REVISE' ? 'uneven' : 'weak'}. ` +
        'Its structure helps, but some claims would benefit from evidence.',
      '',
    );
    if (!ctx.flags.includes('noverdict')) lines.push('### Verdict', `VERDICT: ${verdict}`, '');
    lines.push('### Recommendations');
    if (verdict === 'APPROVE') lines.push('None required.');
    else
      lines.push(
        '1. Support the main claims with sources',
        '2. Cover the missing edge cases',
        '3. Tighten the wording',
      );
    if (ctx.flags.includes('echo')) {
      // Unquoted and after its own verdict: only reading the content as data keeps these apart.
      const repeated = content.split('\n').filter((l) => /verdict|\|/i.test(l));
      lines.push('', 'For the record, the content itself contains these lines:', ...repeated);
    }
    return lines.join('\n');
  },
};

/** A foreman whose arithmetic is deliberately off: the server's figures must win. */
export const foremanResponder: SimulatedResponder = {
  kind: 'foreman',
  matches: (prompt) => prompt.includes(FOREMAN_PROMPT_MARKER),
  respond: (ctx) => {
    const { blocks, outside } = readFences(ctx.prompt);
    const majority = /Majority Verdict: (APPROVE|REVISE|REJECT)/.exec(outside)?.[1] ?? 'REVISE';
    const assessments = blocks.filter((b) => b.kind === 'ASSESSMENT');
    const jurors = assessments.length;
    const verdicts = assessments.flatMap((b) =>
      [...b.text.matchAll(/^VERDICT: (APPROVE|REVISE|REJECT)$/gm)].map((m) => m[1]),
    );
    // Unanimous only when every juror gave a verdict and all agree (issue 36: a juror without a
    // readable verdict did not vote with the majority).
    const dissent = verdicts.some((v) => v !== majority);
    const missing = assessments.filter((b) => !/^VERDICT: (APPROVE|REVISE|REJECT)$/m.test(b.text)).length;
    return [
      '## Jury Verdict Report',
      '',
      `[simulated report by ${ctx.model}]`,
      '',
      `### Final Verdict: ${majority}`,
      `The jury of ${jurors} reached ${majority} by majority.`,
      '',
      '### Dimension Analysis',
      '',
      '| Dimension | Avg Score | Min | Max | Consensus |',
      '|-----------|:---------:|:---:|:---:|-----------|',
      ...DIMENSIONS.map(
        (d) =>
          `| ${label(d)} | 9.9 | 1 | 10 | ${pick(['Strong agreement', 'Mixed', 'Disagreement'], ctx.random)} |`,
      ),
      '| **Overall** | 9.9 | 1 | 10 | |',
      '',
      '### Key Strengths (Consensus)',
      '- Clear structure',
      '- Stays on topic',
      '',
      '### Key Weaknesses (Consensus)',
      '- Claims lack supporting evidence',
      '',
      '### Improvement Recommendations',
      ...(majority === 'APPROVE'
        ? ['None needed.']
        : ['1. Support the main claims with sources', '2. Cover the missing edge cases']),
      '',
      '### Dissenting Opinions',
      ...(dissent ? ['- At least one juror disagreed with the majority and explained why.'] : []),
      ...(missing > 0
        ? [
            `- ${missing} of ${jurors} jurors gave no verdict that could be read, so the jury was not unanimous.`,
          ]
        : []),
      ...(!dissent && missing === 0 ? ['The jury was unanimous.'] : []),
    ].join('\n');
  },
};

export const juryResponders: SimulatedResponder[] = [jurorResponder, foremanResponder];
