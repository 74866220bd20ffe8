import { buildEvaluationPrompt, buildForemanPrompt, buildJuryTitlePrompt } from './jury.prompts';

describe('jury prompts', () => {
  it('omits the original-question block when there is none', () => {
    expect(buildEvaluationPrompt('the content')).not.toContain('ORIGINAL QUESTION');
    expect(buildEvaluationPrompt('the content', 'Why?')).toContain(
      'ORIGINAL QUESTION:\nWhy?\n\nCONTENT UNDER EVALUATION:\nthe content',
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
    expect(prompt).toContain(
      'CONTENT EVALUATED:\nthe content\n\nORIGINAL QUESTION:\nWhy?\n\nJUROR ASSESSMENTS:',
    );
    expect(prompt).toContain('--- Juror 1 (x/a) ---\nraw text A');
    expect(prompt).toContain('--- Juror 2 (x/b) ---\nraw text B');
    expect(prompt).toContain(
      'VOTE TALLY:\n- APPROVE: 1\n- REVISE: 1\n- REJECT: 0\n- Majority Verdict: REVISE',
    );
  });
});
