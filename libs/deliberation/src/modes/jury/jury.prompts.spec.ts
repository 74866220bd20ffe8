import { withoutFences } from '../../shared/fence';
import { buildEvaluationPrompt, buildForemanPrompt, buildJuryTitlePrompt } from './jury.prompts';
import { foremanResponder } from './jury.sim';

describe('jury prompts', () => {
  const nonceOf = (prompt: string) => /^<<<CONTENT ([0-9a-f]{16})>>>$/m.exec(prompt)?.[1] ?? 'none';

  it('omits the original-question block when there is none', () => {
    expect(buildEvaluationPrompt('the content')).not.toContain('ORIGINAL QUESTION');
    const prompt = buildEvaluationPrompt('the content', 'Why?');
    const n = nonceOf(prompt);
    // without the containment layer, the template of 03-jury.md
    expect(withoutFences(prompt)).toContain(
      'ORIGINAL QUESTION:\nWhy?\n\nCONTENT UNDER EVALUATION:\nthe content',
    );
    expect(prompt).toContain(
      `ORIGINAL QUESTION:\n<<<QUESTION ${n}>>>\nWhy?\n<<<END QUESTION ${n}>>>\n\n` +
        `CONTENT UNDER EVALUATION:\n<<<CONTENT ${n}>>>\nthe content\n<<<END CONTENT ${n}>>>\n\nScore each dimension`,
    );
  });

  it('titles a jury session from a preview of the content', () => {
    const [message] = buildJuryTitlePrompt(`${'word '.repeat(100)}end`);
    expect(message.content).toMatch(
      /^Generate a brief title \(3-5 words\) for a jury evaluation session about this content:/,
    );
    expect(message.content).toContain('…"');
    expect(message.content).not.toContain('end"');
  });

  it("gives the foreman the content, every juror's raw text and the tally with the majority", () => {
    const prompt = buildForemanPrompt({
      content: 'the content',
      originalQuestion: 'Why?',
      assessments: [
        { model: 'x/a', assessment: 'raw text A' },
        { model: 'x/b', assessment: 'raw text B' },
      ],
      tally: { approve: 1, revise: 1, reject: 0 },
      majorityVerdict: 'REVISE',
    });
    expect(withoutFences(prompt)).toContain(
      'CONTENT EVALUATED:\nthe content\n\nORIGINAL QUESTION:\nWhy?\n\nJUROR ASSESSMENTS:\n--- Juror 1 (x/a) ---\nraw text A\n',
    );
    const n = nonceOf(prompt);
    expect(prompt).toContain(
      `CONTENT EVALUATED:\n<<<CONTENT ${n}>>>\nthe content\n<<<END CONTENT ${n}>>>\n\n` +
        `ORIGINAL QUESTION:\n<<<QUESTION ${n}>>>\nWhy?\n<<<END QUESTION ${n}>>>\n\nJUROR ASSESSMENTS:`,
    );
    expect(prompt).toContain(
      `--- Juror 1 (x/a) ---\n<<<ASSESSMENT ${n}>>>\nraw text A\n<<<END ASSESSMENT ${n}>>>`,
    );
    expect(prompt).toContain(
      `--- Juror 2 (x/b) ---\n<<<ASSESSMENT ${n}>>>\nraw text B\n<<<END ASSESSMENT ${n}>>>`,
    );
    expect(prompt).toContain(
      'VOTE TALLY:\n- APPROVE: 1\n- REVISE: 1\n- REJECT: 0\n- Majority Verdict: REVISE',
    );
  });

  it('says in the tally when jurors gave no readable verdict, and only then (issue 36)', () => {
    const input = {
      content: 'c',
      assessments: [
        { model: 'x/a', assessment: 'VERDICT: APPROVE' },
        { model: 'x/b', assessment: 'no verdict here' },
      ],
      tally: { approve: 1, revise: 0, reject: 0 },
      majorityVerdict: 'APPROVE' as const,
    };
    expect(buildForemanPrompt(input)).not.toContain('No readable verdict');
    expect(buildForemanPrompt({ ...input, missingVerdicts: 0 })).toBe(buildForemanPrompt(input));
    expect(buildForemanPrompt({ ...input, missingVerdicts: 1 })).toContain(
      '- REJECT: 0\n- No readable verdict: 1 (these jurors did not vote, so do not call the jury unanimous)\n' +
        '- Majority Verdict: APPROVE',
    );
  });

  it('the simulated foreman calls the jury unanimous only when every juror gave the majority verdict', () => {
    const answer = (assessments: string[]) =>
      foremanResponder.respond({
        model: 'sim/f',
        persona: '',
        flags: [],
        messages: [],
        prompt: buildForemanPrompt({
          content: 'c',
          assessments: assessments.map((assessment, i) => ({ model: `sim/j${i}`, assessment })),
          tally: { approve: 2, revise: 0, reject: 0 },
          majorityVerdict: 'APPROVE',
        }),
        random: () => 0.5,
        seed: 's',
      }) as string;
    expect(answer(['VERDICT: APPROVE', 'VERDICT: APPROVE'])).toContain('The jury was unanimous.');
    // Before issue 36, a juror without a verdict was ignored and this said "unanimous".
    const missing = answer(['VERDICT: APPROVE', 'VERDICT: APPROVE', 'no verdict']);
    expect(missing).not.toContain('The jury was unanimous.');
    expect(missing).toContain(
      '1 of 3 jurors gave no verdict that could be read, so the jury was not unanimous.',
    );
    expect(answer(['VERDICT: APPROVE', 'VERDICT: REJECT'])).toContain('At least one juror disagreed');
  });
});
