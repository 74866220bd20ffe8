/** @jest-environment jsdom */
import { render } from '@testing-library/react';
import { StrictMode } from 'react';
import { ballotReason, labelsFor, NamedMarkdown, NamedText, splitLabels } from '../src/views/names';

const labels = { 'Response A': 'sim/alpha', 'Response B': 'sim/beta' };

/** The text as a reader sees it, each chip as [label|name]. */
const seen = (root: Element) => {
  const clone = root.cloneNode(true) as Element;
  clone.querySelectorAll('.name-chip').forEach((chip) => {
    const label = chip.querySelector('.label-badge')?.textContent;
    const name = chip.querySelector('.chip-name')?.textContent;
    chip.replaceWith(`[${label}|${name}]`);
  });
  return clone.textContent?.trim();
};

describe('splitLabels', () => {
  it('replaces every whole-word label the map knows with its model, keeping the text between', () => {
    expect(splitLabels('Response B raised a point Response A missed.', labels)).toEqual([
      { label: 'Response B', model: 'sim/beta' },
      ' raised a point ',
      { label: 'Response A', model: 'sim/alpha' },
      ' missed.',
    ]);
  });

  it('knows a label however it is punctuated or cased, but only as a whole word', () => {
    const text = "**Response A**'s point; response B, RESPONSE A. (Response\u00a0B)";
    expect(splitLabels(text, labels).filter((p) => typeof p !== 'string')).toHaveLength(4);
    for (const notALabel of [
      'ResponseA',
      'Response AB',
      'Response A1',
      'response a',
      'Responses A',
      'xResponse A',
    ]) {
      expect(splitLabels(notALabel, labels)).toEqual([notALabel]);
    }
  });

  it('leaves labels the map does not know, and everything before the reveal', () => {
    expect(splitLabels('Response C and Response A', labels)).toEqual([
      'Response C and ',
      { label: 'Response A', model: 'sim/alpha' },
    ]);
    expect(splitLabels('Response A won.', {})).toEqual(['Response A won.']);
    expect(splitLabels('', labels)).toEqual([]);
    // a map inherits nothing: "constructor" is no label
    expect(splitLabels('Response A', { 'Response A': 'x' })).toEqual([{ label: 'Response A', model: 'x' }]);
  });
});

describe('ballotReason', () => {
  it('is the ballot without its VOTE line, or the whole ballot when nothing else is left', () => {
    expect(ballotReason('Response A is best.\n\nVOTE: Response A')).toBe('Response A is best.');
    expect(ballotReason('Clear.\n**VOTE:** Response B\n')).toBe('Clear.');
    expect(ballotReason('VOTE: Response B')).toBe('VOTE: Response B');
    expect(ballotReason('I abstain.')).toBe('I abstain.');
  });
});

describe('labelsFor', () => {
  it('gives each model its label, a model named twice two labels', () => {
    expect(
      labelsFor(['b', 'a', 'b', 'z'], { 'Response A': 'a', 'Response B': 'b', 'Response C': 'b' }),
    ).toEqual(['Response B', 'Response A', 'Response C', undefined]);
  });
});

describe('NamedText and NamedMarkdown', () => {
  it('show the name with the label as a badge in place of the label', () => {
    const { container } = render(<NamedText text="Response B raised a point." labels={labels} />);
    expect(seen(container)).toBe('[Response B|sim/beta] raised a point.');
    expect(container.querySelector('.name-chip')?.getAttribute('title')).toBe('Response B: sim/beta');
  });

  it('render Markdown with names in it, in lists, emphasis and code alike', () => {
    const text = 'Ranking:\n\n1. **Response B** is best\n2. Response A\n\n`Response A`';
    const { container } = render(<NamedMarkdown text={text} labels={labels} />);
    expect(container.querySelector('ol li strong .name-chip .chip-name')?.textContent).toBe('sim/beta');
    expect(seen(container.querySelector('ol')!)).toContain('[Response A|sim/alpha]');
    expect(container.querySelectorAll('.name-chip')).toHaveLength(3);
  });

  it('never turns model text or a model id into markup, and leaves link addresses alone', () => {
    const hostile = [
      'Response A <img src=x onerror="window.pwned=1"> <script>window.pwned=1</script>',
      '[Response B](https://example.com/Response%20B)',
    ].join('\n\n');
    const { container } = render(
      <NamedMarkdown text={hostile} labels={{ 'Response A': '<b>bold</b>', 'Response B': 'sim/beta' }} />,
    );
    expect(container.querySelector('img, script, b')).toBeNull();
    expect(container.querySelector('.chip-name')?.textContent).toBe('<b>bold</b>');
    const link = container.querySelector('a')!;
    expect(link.getAttribute('href')).toBe('https://example.com/Response%20B');
    expect(link.querySelector('.chip-name')?.textContent).toBe('sim/beta');
    expect(container.querySelectorAll('.name-chip')).toHaveLength(2);
  });

  it('follows a new map, and shows labels as written before there is one', () => {
    const { container, rerender } = render(<NamedMarkdown text="Response A wins." />);
    expect(seen(container)).toBe('Response A wins.');
    rerender(<NamedMarkdown text="Response A wins." labels={labels} />);
    expect(seen(container)).toBe('[Response A|sim/alpha] wins.');
    // a page renders its views again at every event: the chips stay
    rerender(
      <StrictMode>
        <NamedMarkdown text="Response A wins." labels={{ ...labels }} />
      </StrictMode>,
    );
    rerender(
      <StrictMode>
        <NamedMarkdown text="Response A wins." labels={{ ...labels }} />
      </StrictMode>,
    );
    expect(seen(container)).toBe('[Response A|sim/alpha] wins.');
    rerender(<NamedMarkdown text="Response A wins again." labels={labels} />);
    expect(seen(container)).toBe('[Response A|sim/alpha] wins again.');
    rerender(<NamedMarkdown text="Response A wins." labels={{ 'Response A': 'sim/other' }} />);
    expect(seen(container)).toBe('[Response A|sim/other] wins.');
    expect(container.querySelectorAll('.name-chip')).toHaveLength(1);
  });
});
