/** @jest-environment jsdom */
import { fireEvent, render, screen, within } from '@testing-library/react';
import { lineDiff, niceTicks } from '../src/charts';
import { Markdown } from '../src/markdown';
import { CouncilView, ranksByModel } from '../src/views/council';
import { DebateView } from '../src/views/debate';
import { convergenceThreshold, delphiRounds, DelphiView } from '../src/views/delphi';
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

/** The text as a reader sees it, each name chip as [label|name]. */
const seen = (root: Element | null) => {
  const clone = root!.cloneNode(true) as Element;
  // blocks read apart, as on the page
  clone.querySelectorAll('div, p, li, h3, h4').forEach((block) => block.append(' '));
  clone.querySelectorAll('.name-chip').forEach((chip) => {
    chip.replaceWith(
      `[${chip.querySelector('.label-badge')?.textContent}|${chip.querySelector('.chip-name')?.textContent}]`,
    );
  });
  return (clone.textContent ?? '').replace(/\s+/g, ' ').trim();
};

/** Every "Response X" a reader sees outside a label badge. */
const bareLabels = (root: Element) => {
  const found: string[] = [];
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    if (node.parentElement?.closest('.label-badge')) continue;
    found.push(...((node.nodeValue ?? '').match(/Response [A-Z]\b/g) ?? []));
  }
  return found;
};

const chart = (container: HTMLElement, name: RegExp) =>
  [...container.querySelectorAll('[role="img"]')].find((el) =>
    name.test(el.getAttribute('aria-label') ?? ''),
  );

describe('niceTicks', () => {
  it('spans the values with round steps, and pads a single value', () => {
    expect(niceTicks(0, 4, 5, true)).toEqual([0, 1, 2, 3, 4]);
    expect(niceTicks(0, 7, 5, true)).toEqual([0, 2, 4, 6, 8]);
    expect(niceTicks(0, 1, 5, true)).toEqual([0, 1]);
    expect(niceTicks(9000, 40000)).toEqual([0, 10000, 20000, 30000, 40000]);
    const single = niceTicks(9458, 9458);
    expect(single.length).toBeGreaterThanOrEqual(3);
    expect(single[0]).toBeLessThan(9458);
    expect(single[single.length - 1]).toBeGreaterThan(9458);
  });
});

describe('CouncilView', () => {
  it('leads with the synthesis rendered as Markdown', () => {
    render(<CouncilView result={fixture.council} />);
    const synthesis = screen.getByRole('region', { name: 'synthesis' });
    expect(within(synthesis).getByRole('heading', { name: 'The answer' })).toBeTruthy();
    expect(synthesis.textContent).toContain('Synthesis by sim/chair');
  });

  it('shows one answer at a time in tabs, which the arrow keys move through', () => {
    const { container } = render(<CouncilView result={fixture.council} />);
    const tabs = screen.getAllByRole('tab');
    expect(tabs.map((t) => t.getAttribute('aria-selected'))).toEqual(['true', 'false']);
    expect(tabs.map((t) => t.tabIndex)).toEqual([0, -1]);
    expect(container.textContent).toContain('Alpha says forty-two');
    expect(container.textContent).not.toContain('Beta says seven');
    fireEvent.click(tabs[1]);
    expect(container.textContent).toContain('Beta says seven');
    expect(container.textContent).not.toContain('Alpha says forty-two');
    fireEvent.keyDown(screen.getAllByRole('tab')[1], { key: 'ArrowRight' });
    expect(screen.getAllByRole('tab')[0].getAttribute('aria-selected')).toBe('true');
    expect(document.activeElement).toBe(screen.getAllByRole('tab')[0]);
    fireEvent.keyDown(screen.getAllByRole('tab')[0], { key: 'End' });
    expect(container.textContent).toContain('Beta says seven');
  });

  it('tabulates the aggregate ranking with names, and charts the average ranks beside it', () => {
    const { container } = render(<CouncilView result={fixture.council} />);
    expect(rows(screen.getByRole('table')).slice(1)).toEqual([
      ['1', 'Response A sim/alpha', '1', '1'],
      ['2', 'Response B sim/beta', '2', '1'],
    ]);
    const ranks = chart(container, /^Average rank/)!;
    expect(ranks.getAttribute('aria-label')).toBe(
      'Average rank of each answer: sim/alpha 1.00, sim/beta 2.00',
    );
    const dots = [...ranks.querySelectorAll('.dot')].map((d) => (d as HTMLElement).style.left);
    // first and last place on the 1st…2nd scale
    expect(dots[0]).toMatch(/^calc\(0\.6rem \+ (0 \* \(100% - 1\.2rem\)|\(100% - 1\.2rem\) \* 0)\)$/);
    expect(dots[1]).toMatch(/^calc\(0\.6rem \+ (1 \* \(100% - 1\.2rem\)|\(100% - 1\.2rem\) \* 1)\)$/);
    expect(ranks.querySelectorAll('.mark')).toHaveLength(2); // one evaluator ranked both
    expect([...ranks.querySelectorAll('.axis .tick')].map((t) => t.textContent)).toEqual(['1st', '2nd']);
    expect(container.querySelector('.rank-chart .legend')?.textContent).toContain('average rank');
  });

  it("lists each evaluator's extracted ranking by name, and names the labels in its text", () => {
    const { container } = render(<CouncilView result={fixture.council} />);
    const cards = [...container.querySelectorAll('article.evaluation')];
    expect(cards.map((c) => c.querySelector('h4')?.textContent)).toEqual(['sim/alpha', 'sim/beta']);
    const ranking = within(cards[0] as HTMLElement).getByRole('list', { name: 'ranking by sim/alpha' });
    expect([...ranking.querySelectorAll('li')].map(seen)).toEqual([
      '[Response A|sim/alpha]',
      '[Response B|sim/beta]',
    ]);
    expect(cards[1].querySelector('.no-ranking')?.textContent).toContain('No ranking could be read');
    expect(seen(cards[0].querySelector('details .markdown'))).toMatch(
      /^\[Response B\|sim\/beta\] is thin; \[Response A\|sim\/alpha\] is complete\./,
    );
    expect(bareLabels(container)).toEqual([]);
    expect(ranksByModel(fixture.council)).toEqual(
      new Map([
        ['sim/alpha', [1]],
        ['sim/beta', [2]],
      ]),
    );
  });

  it('renders what exists while stages are still running, labels as written', () => {
    const { container } = render(
      <CouncilView result={{ stage1: fixture.council.stage1, stage2: fixture.council.stage2 }} />,
    );
    expect(screen.queryByRole('region', { name: 'synthesis' })).toBeNull();
    expect(screen.queryByRole('table')).toBeNull();
    expect(container.textContent).toContain('Alpha says');
    expect(container.querySelector('article.evaluation details')?.textContent).toContain(
      'Response B is thin',
    );
  });
});

describe('VoteView', () => {
  it('names the winner, with its label as a badge, and the tiebreak', () => {
    render(<VoteView result={fixture.vote} />);
    const winner = screen.getByRole('region', { name: 'winner' });
    expect(seen(winner.querySelector('h3'))).toBe(
      'Winner: [Response B|sim/beta] 1/2 votes tie broken: chairman',
    );
  });

  it('charts the tally by name, the winner highlighted', () => {
    const { container } = render(<VoteView result={fixture.vote} />);
    const votes = chart(container, /^Votes per answer/)!;
    expect(votes.getAttribute('aria-label')).toBe(
      'Votes per answer: sim/beta (Response B) 1, sim/alpha (Response A) 1',
    );
    // most votes first, the winner first of a tie
    expect([...votes.querySelectorAll('.hbar-label')].map(seen)).toEqual([
      '[Response B|sim/beta]',
      '[Response A|sim/alpha]',
    ]);
    expect([...votes.querySelectorAll('.hbar')].map((b) => b.className)).toEqual(['hbar win', 'hbar']);
    expect([...votes.querySelectorAll('.axis .tick')].map((t) => t.textContent)).toEqual(['0', '1']);
  });

  it('lists every ballot with its voter, its choice by name and its reason', () => {
    render(<VoteView result={fixture.vote} />);
    const ballots = within(screen.getByRole('list', { name: 'ballots' })).getAllByRole('listitem');
    expect(ballots.map(seen)).toEqual([
      'sim/alpha voted for [Response A|sim/alpha] (its own answer) [Response A|sim/alpha] is the most complete; [Response B|sim/beta] is too short.',
      'sim/beta voted for [Response B|sim/beta] (its own answer) [Response B|sim/beta] says it in fewer words.',
      'sim/gamma no valid vote I like both.',
    ]);
    expect(screen.getByRole('region', { name: 'votes' }).textContent).toContain('2 valid votes, 1 invalid');
  });

  it('states the tie and the chairman tiebreak with its reasoning, by name', () => {
    const { container } = render(<VoteView result={fixture.vote} />);
    expect(seen(container.querySelector('.tie-note'))).toBe(
      'Tie between [Response A|sim/alpha] and [Response B|sim/beta] with 1 vote each.',
    );
    const tiebreak = screen.getByRole('region', { name: 'tiebreak' });
    expect(seen(tiebreak)).toBe(
      'Tiebreak The chairman sim/chair chose [Response B|sim/beta]. On balance [Response B|sim/beta] is the stronger answer.',
    );
    expect(bareLabels(container)).toEqual([]);
  });

  it('shows every answer, the winner first, each with its votes', () => {
    const { container } = render(<VoteView result={fixture.vote} />);
    const answers = [...screen.getByRole('region', { name: 'answers' }).querySelectorAll('article.answer')];
    expect(answers.map((a) => seen(a.querySelector('h4')))).toEqual([
      '[Response B|sim/beta] 1 vote winner 340 ms',
      '[Response A|sim/alpha] 1 vote 120 ms',
    ]);
    expect(answers[0].className).toContain('winner');
    expect(answers.map((a) => a.querySelector('.markdown')?.textContent?.trim())).toEqual([
      'Beta says seven.',
      'Alpha says forty-two.',
    ]);
    expect(container.textContent).not.toContain('undefined');
  });

  it('says the alphabetical fallback when the chairman gave no usable choice', () => {
    const result = {
      ...fixture.vote,
      tiebreak: { ...fixture.vote.tiebreak!, method: 'alphabetical' as const, chosenLabel: 'Response A' },
    };
    render(<VoteView result={result} />);
    expect(seen(screen.getByRole('region', { name: 'tiebreak' }))).toContain(
      'the first tied label alphabetically won: [Response A|sim/alpha]',
    );
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
    expect(report.textContent).toContain('overall 6.5/10');
    expect(report.innerHTML).toContain('<strong>approves</strong>');
  });

  it('gives each juror a card with a radar of five scores and a verdict badge, switchable as tabs', () => {
    const { container } = render(<JuryView result={fixture.jury} />);
    const cards = container.querySelectorAll('article.card');
    expect(cards).toHaveLength(2);
    const radars = container.querySelectorAll('svg.radar[role="img"]');
    expect(radars).toHaveLength(2);
    expect(radars[0].getAttribute('aria-label')).toBe(
      'Scores by sim/j1, out of 10: Accuracy 8, Completeness 7, Clarity 8, Relevance 9, Actionability 8',
    );
    expect(cards[1].querySelector('.badge')?.textContent).toBe('REVISE');
    const radarLabels = [...cards[0].querySelectorAll('svg text.chart-label')].map((t) => t.textContent);
    expect(radarLabels).toEqual([
      'Accuracy 8',
      'Completeness 7',
      'Clarity 8',
      'Relevance 9',
      'Actionability 8',
    ]);
    expect([...cards[0].querySelectorAll('svg text.tick-label')].map((t) => t.textContent)).toEqual([
      '5',
      '10',
    ]);
    expect(cards[0].className).toContain('active');
    // the tabs show on a phone only (a media query), so they are looked for hidden too
    const tabs = screen.getAllByRole('tab', { hidden: true });
    expect(tabs.map((t) => t.textContent)).toEqual(['sim/j1', 'sim/j2']);
    fireEvent.click(tabs[1]);
    expect(cards[1].className).toContain('active');
    expect(cards[0].className).not.toContain('active');
  });

  it('charts the dimensions (average bar, min–max whisker) on a 0–10 axis with a legend, and as a table', () => {
    const { container } = render(<JuryView result={fixture.jury} />);
    const dimensions = chart(container, /^Average score per dimension/)!;
    expect(dimensions.getAttribute('aria-label')).toContain('Accuracy 6.5 (5–8)');
    const accuracy = dimensions.querySelector('[data-key="accuracy"]')!;
    expect((accuracy.querySelector('.avg-bar') as HTMLElement).style.width).toBe('65%');
    expect((accuracy.querySelector('.whisker') as HTMLElement).style.left).toBe('50%');
    expect((accuracy.querySelector('.whisker') as HTMLElement).style.width).toBe('30%');
    expect([...dimensions.querySelectorAll('.axis .tick')].map((t) => t.textContent)).toEqual([
      '0',
      '2',
      '4',
      '6',
      '8',
      '10',
    ]);
    expect(container.querySelector('.range-chart .legend')?.textContent).toBe(
      'average scorelowest to highest juror',
    );
    expect(rows(screen.getByRole('table'))[1]).toEqual(['Accuracy', '6.5', '5–8']);
  });

  it('charts the verdicts on an axis of jurors', () => {
    const { container } = render(<JuryView result={fixture.jury} />);
    const verdicts = chart(container, /^Jurors per verdict/)!;
    expect(verdicts.getAttribute('aria-label')).toBe('Jurors per verdict: approve 1, revise 1, reject 0');
    expect([...verdicts.querySelectorAll('.hbar-value')].map((t) => t.textContent)).toEqual(['1', '1', '0']);
    expect([...verdicts.querySelectorAll('.axis .tick')].map((t) => t.textContent)).toEqual(['0', '1', '2']);
  });

  it('counts the jurors whose scores and verdicts were read, not those that answered', () => {
    // Issue 36: "Overall average 3.4/10 from 3 of 3 jurors" when one juror's scores could be read.
    const none = { accuracy: null, completeness: null, clarity: null, relevance: null, actionability: null };
    const [j1, j2] = fixture.jury.jurors;
    const jurors = [
      j1,
      { ...j2, scores: none, average: null, parseSuccess: false },
      { ...j2, model: 'sim/j3', verdict: null, scores: none, average: null, parseSuccess: false },
    ];
    const jurorSummary = { ...fixture.jury.jurorSummary, jurorCount: 3, successfulJurors: 3 };
    render(<JuryView result={{ ...fixture.jury, jurors, jurorSummary }} />);
    const summary = screen.getByRole('region', { name: 'summary' }).textContent;
    expect(summary).toContain('from the scores of 1 of 3 jurors (2 answered without a readable score)');
    expect(summary).toContain('verdicts read from 2 of 3 jurors');
    expect(summary).not.toContain('from 3 of 3 jurors');
  });

  it('marks a juror without a verdict', () => {
    const jurors = [{ ...fixture.jury.jurors[0], verdict: null, parseSuccess: false }];
    render(<JuryView result={{ jurors }} />);
    expect(screen.getByText('no verdict')).toBeTruthy();
  });
});

describe('DebateView', () => {
  it('shows the winner by name with its decision, and the summary bar', () => {
    const { container } = render(<DebateView result={fixture.debate} />);
    const winner = screen.getByRole('region', { name: 'winner' });
    expect(seen(winner.querySelector('h3'))).toBe('Winner: [Response B|sim/alpha] REVISE 2/2 votes');
    expect(container.querySelector('.summary-bar')?.textContent).toBe('1 revised, 1 stood, 0 merged');
  });

  it("names round 1's labels in the reasoning and the vote's labels in the chart and ballots", () => {
    const { container } = render(<DebateView result={fixture.debate} />);
    // round 1: Response B was sim/beta (the badge says "round 1"); in the vote, Response B is
    // sim/alpha's revised answer
    expect(seen(container.querySelector('.revision .reasoning'))).toBe(
      '[Response B · round 1|sim/beta] had a point.',
    );
    const votes = chart(container, /^Votes per revised answer/)!;
    expect([...votes.querySelectorAll('.hbar-row[data-key] .hbar-label')].map(seen)).toEqual([
      '[Response B|sim/alpha]',
      '[Response A|sim/beta]',
    ]);
    // each label sits on its own line, before (above) its bar, never inside the bar's track
    for (const row of votes.querySelectorAll('.hbar-row[data-key]')) {
      expect([...row.children].map((c) => c.className)).toEqual(['hbar-label', 'hbar-track', 'hbar-value']);
    }
    const ballots = within(screen.getByRole('list', { name: 'ballots' })).getAllByRole('listitem');
    expect(ballots.map(seen)).toEqual([
      'sim/alpha voted for [Response B|sim/alpha] (its own answer) [Response B|sim/alpha] covers more.',
      'sim/beta voted for [Response B|sim/alpha] [Response B|sim/alpha], clearly.',
    ]);
    expect(bareLabels(container)).toEqual([]);
  });

  it('shows every answer: each revision with its votes and revised text, the round 1 answers', () => {
    const { container } = render(<DebateView result={fixture.debate} />);
    const cards = [...container.querySelectorAll('article.revision')];
    expect(cards.map((c) => c.querySelector('h4')?.textContent)).toEqual([
      'sim/alpha REVISE +2 words',
      'sim/beta STAND -2 words',
    ]);
    expect(cards.map((c) => c.querySelector('p.muted')?.textContent)).toEqual([
      'In the vote as Response B: 2 votes, the winner',
      'In the vote as Response A: 0 votes',
    ]);
    const diff = [...cards[0].querySelectorAll('.diff > div')].map((d) => d.textContent);
    expect(diff).toEqual(['  one', '+ three four five', '- two']);
    const round1 = screen.getByRole('region', { name: 'round 1 answers' });
    expect([...round1.querySelectorAll('h4')].map(seen)).toEqual([
      '[Response A · round 1|sim/alpha] 120 ms',
      '[Response B · round 1|sim/beta] 340 ms',
    ]);
  });

  it('says how a tie was broken', () => {
    const result = {
      ...fixture.debate,
      votes: {
        ...fixture.debate.votes,
        tallies: { 'Response A': 1, 'Response B': 1 },
        isTie: true,
        tiedLabels: ['Response A', 'Response B'],
      },
      winner: {
        ...fixture.debate.winner,
        winnerLabel: 'Response A',
        winnerModel: 'sim/beta',
        voteCount: 1,
        tiebroken: true,
        tiebreakerMethod: 'alphabetical' as const,
      },
    };
    const { container } = render(<DebateView result={result} />);
    expect(seen(container.querySelector('.tie-note'))).toBe(
      'Tie between [Response A|sim/beta] and [Response B|sim/alpha] with 1 vote each.',
    );
    expect(seen(container.querySelector('.tiebreak'))).toBe(
      'Debate breaks a tie alphabetically: the first tied label won, [Response A|sim/beta].',
    );
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
  const convergence = (container: HTMLElement) => container.querySelector('svg.convergence')!;
  const ticks = (svg: Element) => [...svg.querySelectorAll('.y-tick text')].map((t) => t.textContent);

  it('keeps estimates anonymous while the run goes on', () => {
    const { container } = render(<DelphiView result={fixture.delphiRunning} events={fixture.delphiEvents} />);
    expect(container.querySelector('.banner')?.textContent).toContain('NUMERIC question');
    const names = [...container.querySelectorAll('article.card h4')].map((h) => h.textContent);
    expect(names).toEqual(['Participant 1', 'Participant 2', 'Participant 1', 'Participant 2']);
    expect(container.textContent).not.toContain('sim/p1');
    const svg = convergence(container);
    expect(svg.getAttribute('role')).toBe('img');
    expect(svg.querySelectorAll('rect.band')).toHaveLength(2);
    expect(svg.querySelectorAll('circle.estimate')).toHaveLength(4);
    expect(svg.querySelectorAll('polyline.trajectory')).toHaveLength(2);
    expect([...svg.querySelectorAll('.x-label')].map((t) => t.textContent)).toEqual(['Round 1', 'Round 2']);
  });

  it('draws round 1 alone: a point per panelist, a y axis with ticks, the threshold, a legend', () => {
    const { container } = render(
      <DelphiView result={fixture.delphiRunning} events={fixture.delphiOutlierEvents} />,
    );
    const svg = convergence(container);
    const points = [...svg.querySelectorAll('circle.estimate')];
    expect(points).toHaveLength(4);
    expect(ticks(svg)).toEqual(['0', '10K', '20K', '30K', '40K']);
    expect(svg.querySelector('.y-axis')).not.toBeNull();
    // the outlier stands apart: far above the three others, which sit together
    const ys = points.map((p) => Number(p.getAttribute('cy')));
    const others = ys.slice(0, 3);
    expect(Math.max(...others) - Math.min(...others)).toBeLessThan(10);
    expect(Math.min(...others) - ys[3]).toBeGreaterThan(80);
    expect(points[3].querySelector('title')?.textContent).toBe('Participant 4, round 1: 40,000');
    // the convergence zone, mean ± 15% (the default): 14,875 and 20,125
    expect(svg.querySelectorAll('path.threshold')).toHaveLength(1);
    expect(svg.querySelector('rect.band')).not.toBeNull();
    const legend = screen.getByRole('list', { name: 'chart legend' });
    expect(
      within(legend)
        .getAllByRole('listitem')
        .map((li) => li.textContent),
    ).toEqual([
      'Participant 1',
      'Participant 2',
      'Participant 3',
      'Participant 4',
      'mean',
      '±1 standard deviation',
      'convergence zone: mean ± 15%',
    ]);
    expect(container.querySelector('.threshold-note')?.textContent).toBe(
      'Converged when the standard deviation is under 15% of the mean (CV < 0.15, the mode’s default).',
    );
    expect(svg.getAttribute('aria-label')).toContain('Participant 4 40,000');
  });

  it('draws a panel that agreed at once: one round, the same estimate from everyone', () => {
    const { container } = render(<DelphiView result={fixture.delphiOneRound} events={[]} />);
    const svg = convergence(container);
    expect(svg.querySelectorAll('circle.estimate')).toHaveLength(3);
    expect(ticks(svg).length).toBeGreaterThanOrEqual(3);
    expect(svg.querySelectorAll('path.threshold')).toHaveLength(1);
    expect(screen.getByText('Converged in round 1')).toBeTruthy();
    expect(screen.getByRole('region', { name: 'report' }).textContent).toContain('median 9,458');
    const names = [...container.querySelectorAll('article.card h4')].map((h) => h.textContent);
    expect(names).toEqual(['sim/p1', 'sim/p2', 'sim/p3']);
  });

  it('reveals who estimated what and shows the converged badge and report at the end', () => {
    const { container } = render(<DelphiView result={fixture.delphiDone} events={fixture.delphiEvents} />);
    const names = [...container.querySelectorAll('article.card h4')].map((h) => h.textContent);
    expect(names).toEqual(['sim/p1', 'sim/p2', 'sim/p1', 'sim/p2']);
    const report = screen.getByRole('region', { name: 'report' });
    expect(report.textContent).toContain('Converged in round 2');
    expect(report.innerHTML).toContain('<strong>200</strong>');
    expect(
      within(screen.getByRole('list', { name: 'chart legend' }))
        .getAllByRole('listitem')
        .slice(0, 2)
        .map((li) => li.textContent),
    ).toEqual(['sim/p1', 'sim/p2']);
  });

  it('uses the run’s own threshold when given, and draws none it cannot know', () => {
    const rounds = delphiRounds(fixture.delphiRunning, fixture.delphiEvents);
    expect(rounds.map((r) => r.estimates.map((e) => e.key))).toEqual([
      ['p1', 'p2'],
      ['p1', 'p2'],
    ]);
    expect(convergenceThreshold(true, rounds)).toEqual({ value: 0.15, source: 'default' });
    expect(convergenceThreshold(true, rounds, { numericConvergenceThreshold: 0.3 })).toEqual({
      value: 0.3,
      source: 'run',
    });
    // round 2 (CV 0.05) converged, round 1 (CV 0.5) did not: 0.6 would have converged round 1
    const contradicted = rounds.map((r) => ({ ...r, converged: true }));
    expect(convergenceThreshold(true, contradicted)).toBeNull();
    const { container } = render(
      <DelphiView
        result={fixture.delphiRunning}
        events={fixture.delphiEvents}
        config={{ numericConvergenceThreshold: 0.3 }}
      />,
    );
    expect(container.querySelector('.threshold-note')?.textContent).toContain('under 30% of the mean');
  });

  it('names the same panelist across rounds from the result alone', () => {
    const [first, second] = fixture.delphiDone.rounds;
    const shuffled = {
      ...fixture.delphiDone,
      rounds: [first, { ...second, estimates: [...second.estimates].reverse() }],
    };
    const rounds = delphiRounds(shuffled);
    expect(rounds.map((r) => r.estimates.map((e) => [e.key, e.model]))).toEqual([
      [
        ['p1', 'sim/p1'],
        ['p2', 'sim/p2'],
      ],
      [
        ['p2', 'sim/p2'],
        ['p1', 'sim/p1'],
      ],
    ]);
    const byRoster = delphiRounds(fixture.delphiDone, [], ['sim/p2', 'sim/p1']);
    expect(byRoster[0].estimates.map((e) => [e.key, e.model])).toEqual([
      ['p2', 'sim/p1'],
      ['p1', 'sim/p2'],
    ]);
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

  it('draws stacked distribution bars for a qualitative question, with a legend and the threshold', () => {
    const { container } = render(
      <DelphiView
        result={{ classification: { type: 'qualitative', options: ['Yes', 'No'], reasoning: 'yes or no' } }}
        events={fixture.qualitativeEvents}
      />,
    );
    const stacked = chart(container, /^Answers by round/)!;
    const slices = [...stacked.querySelectorAll('.slice')];
    expect(slices.map((s) => s.getAttribute('title'))).toEqual(['Yes: 50%', 'No: 50%']);
    expect(slices.map((s) => s.className)).toEqual(['slice series-0', 'slice series-1']);
    expect((stacked.querySelector('.threshold-mark') as HTMLElement).style.left).toBe('75%');
    expect(container.querySelector('.stacked .legend')?.textContent).toBe('YesNoconverged at 75% agreement');
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
