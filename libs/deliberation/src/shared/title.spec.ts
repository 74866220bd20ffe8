import { fenceNotice, withoutFences } from './fence';
import { buildTitlePrompt, cleanTitle, fallbackTitle, titlePrompt } from './title';

describe('titles', () => {
  it('uses the prompt of 01-council.md, with the quoted question fenced as data', () => {
    const content = buildTitlePrompt('Why is the sky blue?', 'm1')[0].content;
    const nonce = /^<<<QUESTION ([0-9a-f]{16})>>>$/m.exec(content)?.[1] ?? '';
    expect(content).toBe(
      'Generate a brief title (3-5 words) for a conversation that starts with this question:\n\n' +
        `<<<QUESTION ${nonce}>>>\n"Why is the sky blue?"\n<<<END QUESTION ${nonce}>>>\n\n` +
        `${fenceNotice(nonce)}\n\n` +
        'Reply with ONLY the title. No quotes, no punctuation, no explanation.',
    );
    expect(withoutFences(content)).toBe(
      'Generate a brief title (3-5 words) for a conversation that starts with this question:\n\n' +
        '"Why is the sky blue?"\n\nReply with ONLY the title. No quotes, no punctuation, no explanation.',
    );
    // the same for the same inputs (a retried call); another seed, another boundary
    expect(buildTitlePrompt('Why is the sky blue?', 'm1')[0].content).toBe(content);
    expect(buildTitlePrompt('Why is the sky blue?', 'm2')[0].content).not.toContain(nonce);
  });

  it('titlePrompt: names what is titled and fences the quoted text as the given kind', () => {
    const content = titlePrompt(
      'a jury evaluation session about this content',
      'CONTENT',
      'An essay',
      'j1',
    )[0].content;
    expect(withoutFences(content)).toBe(
      'Generate a brief title (3-5 words) for a jury evaluation session about this content:\n\n' +
        '"An essay"\n\nReply with ONLY the title. No quotes, no punctuation, no explanation.',
    );
    expect(content).toMatch(/^<<<CONTENT [0-9a-f]{16}>>>\n"An essay"\n<<<END CONTENT [0-9a-f]{16}>>>$/m);
  });

  it.each([
    ['"Sky Colour Explained."', 'Sky Colour Explained'],
    ['Title: Blue Skies!\nextra', 'Blue Skies'],
    ['   ', null],
  ])('cleans %j', (raw, expected) => {
    expect(cleanTitle(raw)).toBe(expected);
  });

  it('never cuts an emoji in half', () => {
    const title = cleanTitle(`${'a'.repeat(78)}😀 and more`);
    expect(title).toBe(`${'a'.repeat(78)}…`);
    expect(fallbackTitle(`${'b'.repeat(78)}😀😀`, 1)).toBe(`${'b'.repeat(78)}…`);
  });

  it('falls back to the first words of the question', () => {
    expect(fallbackTitle('one two three')).toBe('one two three');
    expect(fallbackTitle('one two three four five six seven eight')).toBe('one two three four five six…');
  });
});
