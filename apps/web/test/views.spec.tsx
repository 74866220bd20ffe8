/** @jest-environment jsdom */
import { fireEvent, render, screen, within } from '@testing-library/react';
import { lineDiff } from '../src/charts';
import { Markdown } from '../src/markdown';
import { CouncilView } from '../src/views/council';
import { DebateView } from '../src/views/debate';
import { DelphiView } from '../src/views/delphi';
import { JuryView } from '../src/views/jury';
import { VoteView } from '../src/views/vote';
import * as fixture from './fixtures';

const rows = (table: HTMLElement) =>
  within(table)
    .getAllByRole('row')
    .map((row) =>
      within(row)
        .queryAllByRole('cell')
        .map((cell) => cell.textContent),
    );

describe('CouncilView', () => {
  it('leads with the synthesis rendered as Markdown', () => {
    render(<CouncilView result={fixture.council} />);
    const synthesis = screen.getByRole('region', { name: 'synthesis' });
    expect(within(synthesis).getByRole('heading', { name: 'The answer' })).toBeTruthy();
    expect(synthesis.textContent).toContain('Synthesis by sim/chair');
  });

  it('shows one answer at a time in tabs', () => {
    const { container } = render(<CouncilView result={fixture.council} />);
    const tabs = screen.getAllByRole('tab');
    expect(tabs.map((t) => t.getAttribute('aria-selected'))).toEqual(['true', 'false']);
    expect(container.textContent).toContain('Alpha says forty-two');
    expect(container.textContent).not.toContain('Beta says seven');
    fireEvent.click(tabs[1]);
    expect(container.textContent).toContain('Beta says seven');
    expect(container.textContent).not.toContain('Alpha says forty-two');
  });

  it('shows the aggregate ranking, each evaluation with its extracted ranking, and the reveal', () => {
    const { container } = render(<CouncilView result={fixture.council} />);
    expect(rows(screen.getByRole('table')).slice(1)).toEqual([
      ['1', 'sim/alpha', '1', '1'],
      ['2', 'sim/beta', '2', '1'],
    ]);
    const summaries = [...container.querySelectorAll('details summary')].map((s) => s.textContent);
    expect(summaries).toEqual(['sim/alpha: Response A › Response B', 'sim/beta: no ranking could be read']);
    expect(container.querySelector('.reveal')?.textContent).toBe(
      'Response A = sim/alphaResponse B = sim/beta',
    );
  });

  it('renders what exists while stages are still running', () => {
    const { container } = render(<CouncilView result={{ stage1: fixture.council.stage1 }} />);
    expect(screen.queryByRole('region', { name: 'synthesis' })).toBeNull();
    expect(screen.queryByRole('table')).toBeNull();
    expect(container.textContent).toContain('Alpha says');
  });
});

describe('VoteView', () => {
  it('charts the votes, states the tie and the tiebreak, and names the winner', () => {
    const { container } = render(<VoteView result={fixture.vote} />);
    const winner = screen.getByRole('region', { name: 'winner' });
    expect(winner.textContent).toContain('Winner: Response B (sim/beta)');
    expect(winner.textContent).toContain('1/2 votes');
    expect(winner.textContent).toContain('tie broken: chairman');
    const bars = container.querySelectorAll('svg[aria-label="bar chart"] rect');
    expect(bars).toHaveLength(2);
    expect([...bars].map((b) => b.getAttribute('class'))).toEqual(['bar', 'bar bar-win']);
    expect(container.textContent).toContain('Tie between Response A and Response B.');
    expect(container.textContent).toContain('Tiebreak by sim/chair: Response B (chairman)');
  });

  it('has no tie text when there was none', () => {
    const result = {
      ...fixture.vote,
      votes: { ...fixture.vote.votes, isTie: false, tiedLabels: [] },
      tiebreak: undefined,
      winner: { ...fixture.vote.winner, tiebroken: false, tiebreakerMethod: undefined },
    };
    const { container } = render(<VoteView result={result} />);
    expect(container.textContent).not.toMatch(/[Tt]ie/);
  });
});

describe('JuryView', () => {
  it('shows the content with its original question and the foreman report with the verdict', () => {
    const { container } = render(<JuryView result={fixture.jury} />);
    expect(container.querySelector('.content-card')?.textContent).toContain('What shape is the earth?');
    expect(container.querySelector('.content-card')?.textContent).toContain('The earth is round.');
    const report = screen.getByRole('region', { name: 'foreman report' });
    expect(within(report).getByText('APPROVE').className).toContain('verdict-APPROVE');
    expect(report.innerHTML).toContain('<strong>approves</strong>');
  });

  it('gives each juror a card with a radar of five scores and a verdict badge, switchable as tabs', () => {
    const { container } = render(<JuryView result={fixture.jury} />);
    const cards = container.querySelectorAll('article.card');
    expect(cards).toHaveLength(2);
    expect(container.querySelectorAll('svg[aria-label="scores radar chart"]')).toHaveLength(2);
    expect(cards[1].querySelector('.badge')?.textContent).toBe('REVISE');
    const radarLabels = [...cards[0].querySelectorAll('svg text')].map((t) => t.textContent);
    expect(radarLabels).toEqual([
      'Accuracy 8',
      'Completeness 7',
      'Clarity 8',
      'Relevance 9',
      'Actionability 8',
    ]);
    expect(cards[0].className).toContain('active');
    fireEvent.click(screen.getAllByRole('tab')[1]);
    expect(cards[1].className).toContain('active');
    expect(cards[0].className).not.toContain('active');
  });

  it('tabulates the dimensions with average and min–max, and charts the verdicts', () => {
    const { container } = render(<JuryView result={fixture.jury} />);
    expect(rows(screen.getByRole('table'))[0].slice(0, 3)).toEqual(['Accuracy', '6.5', '5–8']);
    const verdictBars = [...container.querySelectorAll('svg[aria-label="bar chart"] text.chart-value')];
    expect(verdictBars.map((t) => t.textContent)).toEqual(['1', '1', '0']);
  });

  it('marks a juror without a verdict', () => {
    const jurors = [{ ...fixture.jury.jurors[0], verdict: null, parseSuccess: false }];
    render(<JuryView result={{ jurors }} />);
    expect(screen.getByText('no verdict')).toBeTruthy();
  });
});

describe('DebateView', () => {
  it('shows the winner with its decision, the summary bar and the vote chart', () => {
    const { container } = render(<DebateView result={fixture.debate} />);
    const winner = screen.getByRole('region', { name: 'winner' });
    expect(winner.textContent).toContain('Winner: sim/alpha');
    expect(winner.textContent).toContain('REVISE');
    expect(winner.textContent).toContain('2/2 votes');
    expect(container.querySelector('.summary-bar')?.textContent).toBe('1 revised, 1 stood, 0 merged');
    const labels = [...container.querySelectorAll('svg[aria-label="bar chart"] text.chart-label')];
    expect(labels.map((t) => t.textContent)).toEqual(['Response A (sim/beta)', 'Response B (sim/alpha)']);
  });

  it('gives each revision a decision badge, the word-count change and a diff', () => {
    const { container } = render(<DebateView result={fixture.debate} />);
    const cards = [...container.querySelectorAll('.result > article.card')];
    expect(cards.map((c) => c.querySelector('h4')?.textContent)).toEqual([
      'sim/alpha REVISE +2 words',
      'sim/beta STAND -2 words',
    ]);
    const diff = [...cards[0].querySelectorAll('.diff > div')].map((d) => d.textContent);
    expect(diff).toEqual(['  one', '+ three four five', '- two']);
  });
});

describe('lineDiff', () => {
  it('keeps common lines and marks the rest', () => {
    expect(lineDiff('a\nb\nc', 'a\nc\nd')).toEqual([
      { kind: 'same', text: 'a' },
      { kind: 'removed', text: 'b' },
      { kind: 'same', text: 'c' },
      { kind: 'added', text: 'd' },
    ]);
    expect(lineDiff('same', 'same')).toEqual([{ kind: 'same', text: 'same' }]);
  });
});

describe('DelphiView', () => {
  it('keeps estimates anonymous while the run goes on', () => {
    const { container } = render(<DelphiView result={fixture.delphiRunning} events={fixture.delphiEvents} />);
    expect(container.querySelector('.banner')?.textContent).toContain('NUMERIC question');
    const names = [...container.querySelectorAll('article.card h4')].map((h) => h.textContent);
    expect(names).toEqual(['Participant 1', 'Participant 2', 'Participant 1', 'Participant 2']);
    expect(container.textContent).not.toContain('sim/p1');
    expect(container.querySelector('svg[aria-label="convergence chart"] polygon.band')).not.toBeNull();
    expect(container.querySelectorAll('svg[aria-label="convergence chart"] text')).toHaveLength(2);
  });

  it('reveals who estimated what and shows the converged badge and report at the end', () => {
    const { container } = render(<DelphiView result={fixture.delphiDone} events={fixture.delphiEvents} />);
    const names = [...container.querySelectorAll('article.card h4')].map((h) => h.textContent);
    expect(names).toEqual(['sim/p1', 'sim/p2', 'sim/p1', 'sim/p2']);
    const report = screen.getByRole('region', { name: 'report' });
    expect(report.textContent).toContain('Converged in round 2');
    expect(report.innerHTML).toContain('<strong>200</strong>');
  });

  it('says when the panel ran out of rounds', () => {
    render(
      <DelphiView
        result={{ ...fixture.delphiDone, converged: false, convergenceRound: null }}
        events={fixture.delphiEvents}
      />,
    );
    expect(screen.getByText('Max rounds reached')).toBeTruthy();
  });

  it('draws stacked distribution bars for a qualitative question', () => {
    const { container } = render(
      <DelphiView
        result={{ classification: { type: 'qualitative', options: ['Yes', 'No'], reasoning: 'yes or no' } }}
        events={fixture.qualitativeEvents}
      />,
    );
    const slices = [...container.querySelectorAll('svg[aria-label="distribution by round"] rect title')];
    expect(slices.map((s) => s.textContent)).toEqual(['Yes: 50%', 'No: 50%']);
    expect(container.textContent).toContain('agreement 50%');
  });
});

describe('Markdown', () => {
  it('renders formatting but never script from model output', () => {
    const hostile = [
      '**bold** <script>window.pwned = 1</script>',
      '<img src=x onerror="window.pwned = 1">',
      '[click](javascript:window.pwned=1)',
      '<iframe src="https://example.com"></iframe>',
    ].join('\n\n');
    const { container } = render(<Markdown text={hostile} />);
    const html = container.innerHTML;
    expect(html).toContain('<strong>bold</strong>');
    expect(html).not.toMatch(/<script|onerror|javascript:|<iframe/i);
  });
});
