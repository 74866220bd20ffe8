import { buildTitlePrompt, cleanTitle, fallbackTitle } from './title';

describe('titles', () => {
  it('uses the prompt of 01-council.md', () => {
    expect(buildTitlePrompt('Why is the sky blue?')[0].content).toBe(
      'Generate a brief title (3-5 words) for a conversation that starts with this question:\n\n' +
        '"Why is the sky blue?"\n\nReply with ONLY the title. No quotes, no punctuation, no explanation.',
    );
  });

  it.each([
    ['"Sky Colour Explained."', 'Sky Colour Explained'],
    ['Title: Blue Skies!\nextra', 'Blue Skies'],
    ['   ', null],
  ])('cleans %j', (raw, expected) => {
    expect(cleanTitle(raw)).toBe(expected);
  });

  it('falls back to the first words of the question', () => {
    expect(fallbackTitle('one two three')).toBe('one two three');
    expect(fallbackTitle('one two three four five six seven eight')).toBe('one two three four five six…');
  });
});
