import type { CouncilResult, DelphiResult, JuryResult } from '@conclave/contracts';
import fc from 'fast-check';
import { marked, type Token, type Tokens } from 'marked';
import { recordedScenarios, viewOf } from './fixtures/views';
import { fenced, inline } from './markdown';
import { outcomeOf } from './outcome';
import { transcriptMarkdown } from './transcript';

/** Every token of the document, nested ones included, except what code blocks hold. */
function tokens(markdown: string): Token[] {
  const all: Token[] = [];
  marked.walkTokens(marked.lexer(markdown), (token) => {
    all.push(token);
  });
  return all;
}
const headings = (markdown: string) =>
  tokens(markdown)
    .filter((t): t is Tokens.Heading => t.type === 'heading')
    .map((t) => t.text);
const codeBlocks = (markdown: string) =>
  tokens(markdown)
    .filter((t): t is Tokens.Code => t.type === 'code')
    .map((t) => t.text);

const HOSTILE = [
  '```',
  '# Injected heading',
  '~~~',
  '![pixel](https://tracker.example/p.png) [click](javascript:alert(1)) <img src=x onerror=alert(1)>',
  '<script>alert(1)</script>',
  '````',
  '| a | b |',
  'control\u0000chars\u001b[31m and a bidi \u202e override',
].join('\n');

describe('transcriptMarkdown', () => {
  it.each(recordedScenarios().map(([s, v]) => [s.name, v] as const))(
    '%s: every stage, failure and call, each model-written text in a code block',
    (_name, view) => {
      const md = transcriptMarkdown(view);
      const o = outcomeOf(view, { web: '', transcript: '' });
      expect(headings(md)).toEqual(expect.arrayContaining(['Final answer', 'Failures', 'Usage']));
      for (const p of o.panelists) {
        expect(md).toContain(inline(p.model));
        if (p.answer) expect(codeBlocks(md)).toContain(p.answer.replace(/\r\n?/g, '\n'));
      }
      for (const f of o.failures) expect(md).toContain(inline(f.error));
      if (o.finalText !== null) expect(codeBlocks(md)).toContain(o.finalText);
      // no link, image or HTML anywhere but inside code
      expect(tokens(md).filter((t) => ['link', 'image', 'html'].includes(t.type))).toEqual([]);
    },
  );

  it('shows the question when given', () => {
    const md = transcriptMarkdown(viewOf('council-complete'), { question: 'Why?\n# not a heading' });
    expect(headings(md)).toContain('Question');
    expect(headings(md)).not.toContain('not a heading');
    expect(codeBlocks(md)).toContain('Why?\n# not a heading');
  });

  it('writes the final text once, under "Final answer"', () => {
    const view = viewOf('council-complete');
    const md = transcriptMarkdown(view);
    expect(md.split((view.result as CouncilResult).stage3.response)).toHaveLength(2);
    expect(md).toContain('By the chairman sim/chairman:');
  });

  it('jury: says whose scores and verdicts were read when some could not be', () => {
    const complete = transcriptMarkdown(viewOf('jury-complete'));
    expect(complete).toMatch(/jurors answered\.$/m);
    const view = viewOf('jury-complete');
    const result = view.result as JuryResult;
    result.jurors[0] = { ...result.jurors[0], verdict: null, parseSuccess: false };
    result.jurors[1] = {
      ...result.jurors[1],
      scores: { accuracy: null, completeness: null, clarity: null, relevance: null, actionability: null },
      average: null,
      parseSuccess: false,
    };
    const n = result.jurors.length;
    expect(transcriptMarkdown(view)).toContain(
      `jurors answered; scores read from ${n - 1}, verdicts from ${n - 1}.`,
    );
  });

  it('says why there is no final answer', () => {
    expect(transcriptMarkdown(viewOf('jury-failed-final'))).toMatch(
      /None: the foreman sim\/foreman:fail failed \(HTTP 400/,
    );
    expect(transcriptMarkdown(viewOf('vote-running'))).toContain(
      'Not yet: the deliberation is still running.',
    );
    expect(transcriptMarkdown(viewOf('debate-failed-final'))).toContain(
      "Not enough panelists answered for the mode's rules.",
    );
  });

  it('keeps hostile model text inside its block: no heading, link, image or HTML escapes', () => {
    const view = viewOf('council-complete');
    const result = view.result as CouncilResult;
    result.stage1[0].response = HOSTILE;
    result.stage2[0].ranking = HOSTILE;
    result.stage3.response = HOSTILE;
    view.error = HOSTILE;
    const md = transcriptMarkdown(view);
    expect(headings(md)).not.toContain('Injected heading');
    expect(tokens(md).filter((t) => ['link', 'image', 'html'].includes(t.type))).toEqual([]);
    const removed = ['\u0000', '\u001b', '\u202e'];
    const expected = removed.reduce((text, c) => text.split(c).join(''), HOSTILE);
    expect(codeBlocks(md).filter((c) => c === expected)).toHaveLength(3);
    for (const c of removed) expect(md.includes(c)).toBe(false);
  });

  it('keeps Delphi panelists anonymous while the exercise runs, and names them after', () => {
    const running = viewOf('delphi-running');
    const md = transcriptMarkdown(running);
    expect(md).toContain('The panelists stay anonymous while the exercise runs');
    const estimates = tokens(md).filter(
      (t): t is Tokens.Table => t.type === 'table' && t.header[0].text === 'Participant',
    );
    expect(estimates.length).toBeGreaterThan(0);
    for (const table of estimates) expect(table.header.map((h) => h.text)).not.toContain('Model');
    for (const round of (running.result as DelphiResult).rounds) {
      for (const e of round.estimates) expect(md).not.toContain(e.reasoning);
    }
    const over = transcriptMarkdown(viewOf('delphi-complete'));
    expect(over).not.toContain('stay anonymous');
    expect(headings(over)).toContain('Reasoning of sim/a, round 1');
  });
});

describe('fenced', () => {
  it('holds any text verbatim in one code block that nothing in it closes', () => {
    fc.assert(
      fc.property(
        fc.string({
          unit: fc.constantFrom('`', '~', '\n', ' ', 'a', '#', '>', '<', '!', '[', ']', '(', ')'),
        }),
        (text) => {
          const blocks = marked.lexer(fenced(text)).filter((t) => t.type !== 'space');
          expect(blocks).toHaveLength(1);
          // (trailing blank lines aside: Markdown does not keep them)
          const code = blocks[0] as Tokens.Code;
          expect({ type: code.type, text: code.text.replace(/\n+$/, '') }).toEqual({
            type: 'code',
            text: text.replace(/\n+$/, ''),
          });
        },
      ),
    );
  });
});

describe('inline', () => {
  it('keeps any text one line of plain text', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), (text) => {
        const escaped = inline(text);
        expect(escaped).not.toMatch(/[\n\r\u2028\u2029]/);
        const kinds = new Set(tokens(`cell: ${escaped}`).map((t) => t.type));
        for (const kind of ['link', 'image', 'html', 'code', 'codespan', 'heading', 'table'])
          expect(kinds).not.toContain(kind);
      }),
    );
  });
});
