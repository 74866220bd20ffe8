import { withoutFences } from '../../shared/fence';
import { buildEvaluationPrompt, buildForemanPrompt, buildJuryTitlePrompt } from './jury.prompts';

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
});
