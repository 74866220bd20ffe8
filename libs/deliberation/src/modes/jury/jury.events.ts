import type { JurorAssessment, JurorSummary } from '@conclave/contracts';
import type { ModeEventText } from '../../event-text/reading';
import {
  fields,
  figure,
  isObject,
  list,
  num,
  OPENING,
  plainPhase,
  plural,
  round2,
  str,
} from '../../event-text/wording';

const jurorText = (juror: JurorAssessment): string =>
  `juror ${juror.model}: ${juror.verdict ?? 'no verdict'}${juror.average !== null ? ` (average ${round2(juror.average)})` : ''}`;

const summaryText = (summary: JurorSummary): string => {
  const { approve, revise, reject } = summary.voteTally;
  return `majority ${summary.majorityVerdict} (approve ${approve}, revise ${revise}, reject ${reject})`;
};

/** How jury's events read (docs: 03-jury.md's event sequence); see event-text/reading.ts. */
export const juryEventText: ModeEventText<'jury'> = {
  events: {
    jury_start: {
      ...OPENING,
      reasoning: () =>
        'Jury: each juror scores the content on five dimensions and gives a verdict; the foreman reports.',
    },
    present_start: { ...plainPhase('present', 'start'), reasoning: null, web: null },
    present_complete: { ...plainPhase('present', 'complete'), reasoning: null, web: null },
    deliberation_start: {
      ...plainPhase('deliberation', 'start'),
      reasoning: () => 'The jurors assess the content.',
      web: null,
    },
    juror_complete: {
      cli: (e) => `[deliberation] ${jurorText(e.data)}`,
      mcp: (e) => jurorText(e.data),
      reasoning: (e) => {
        const juror = fields(e.data);
        const model = str(juror.model) ?? 'A juror';
        const verdict = str(juror.verdict) ?? 'no readable verdict';
        const average = num(juror.average);
        return `${model}: ${verdict}${average === null ? '' : `, average score ${figure(average)}/10`}.`;
      },
      web: null,
    },
    all_jurors_complete: {
      cli: (e) => `[deliberation] complete: ${summaryText(e.data)}`,
      mcp: (e) => `jurors complete: ${summaryText(e.data)}`,
      reasoning: (e) => {
        const summary = fields(e.data);
        const tally = fields(summary.voteTally);
        const majority = str(summary.majorityVerdict);
        const lines = [
          `Jurors: ${figure(tally.approve)} APPROVE, ${figure(tally.revise)} REVISE, ${figure(tally.reject)} REJECT` +
            `${majority ? ` (majority ${majority})` : ''}.`,
        ];
        const failed = list(summary.failedJurors).filter(isObject).length;
        if (failed > 0) lines.push(`${plural(failed, 'juror')} failed.`);
        return lines;
      },
      web: null,
    },
    verdict_start: {
      ...plainPhase('verdict', 'start'),
      reasoning: () => 'The foreman writes the verdict report.',
      web: null,
    },
    verdict_complete: {
      cli: ({ data }) => `[verdict] complete: ${data.finalVerdict} (foreman ${data.model})`,
      mcp: ({ data }) => `verdict complete: ${data.finalVerdict} (foreman ${data.model})`,
      reasoning: (e) => {
        const verdict = str(fields(e.data).finalVerdict);
        return verdict ? `Final verdict: ${verdict}.` : null;
      },
      web: null,
    },
  },
  calls: { deliberation: 'assessed the content', verdict: 'wrote the verdict report' },
};
