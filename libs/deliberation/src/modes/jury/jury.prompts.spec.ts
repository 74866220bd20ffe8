import { buildEvaluationPrompt, buildJuryTitlePrompt } from './jury.prompts';

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
});
