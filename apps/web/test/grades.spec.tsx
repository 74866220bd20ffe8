/** @jest-environment jsdom */
import type { DeliberationGrades } from '@conclave/contracts';
import { render, screen } from '@testing-library/react';
import { answerKind, GradesPanel } from '../src/grades';

const grades: DeliberationGrades = {
  answers: [
    {
      stageType: 'stage1',
      model: 'sim/a:acc100',
      role: 'council',
      participant: 0,
      grade: { verdict: 'correct', extracted: '391', reason: '391 is within 0 of 391', grader: 'numeric' },
    },
    {
      stageType: 'stage1',
      model: 'sim/b:acc0',
      role: 'council',
      participant: 1,
      grade: { verdict: 'incorrect', extracted: '<img src=x onerror=alert(1)>', grader: 'numeric' },
    },
    {
      stageType: 'stage1',
      model: 'sim/c',
      role: 'council',
      participant: 2,
      grade: { verdict: 'unreadable', reason: 'no number in the answer', grader: 'numeric' },
    },
    {
      stageType: 'stage3',
      model: 'sim/chair',
      role: 'chairman',
      participant: null,
      grade: { verdict: 'correct', extracted: '391', grader: 'numeric' },
    },
  ],
  final: null,
};

describe('GradesPanel', () => {
  it('marks each answer ✓, ✗ or ? with its words, what was read and why, and the final answer first', () => {
    // As read over JSON: the final answer is an equal object, not the same one.
    const view = JSON.parse(JSON.stringify({ ...grades, final: grades.answers[3] })) as DeliberationGrades;
    const { container } = render(<GradesPanel grades={view} />);
    const panel = screen.getByRole('region', { name: 'grades' });
    expect(panel.querySelector('.grades-summary')?.textContent).toBe(
      "The panel's final answer: ✓ correct. 4 graded: 2 correct, 1 incorrect, 1 unreadable.",
    );
    const items = [...panel.querySelectorAll('li')];
    expect(items.map((li) => li.querySelector('.grade-mark')?.getAttribute('aria-label'))).toEqual([
      'correct',
      'incorrect',
      'unreadable',
      'correct',
    ]);
    expect(items.map((li) => li.querySelector('.grade-mark')?.textContent)).toEqual(['✓', '✗', '?', '✓']);
    expect(items[0].textContent).toBe('✓ answer sim/a:acc100 read 391 — 391 is within 0 of 391');
    expect(items[2].textContent).toBe('? answer sim/c — no number in the answer');
    // Only the synthesis is marked final.
    expect(items.map((li) => li.classList.contains('grade-final'))).toEqual([false, false, false, true]);
    expect(items[3].textContent).toContain('final');
    // What a grader read is text, never markup.
    expect(container.querySelector('img')).toBeNull();
    expect(items[1].querySelector('code')?.textContent).toBe('<img src=x onerror=alert(1)>');
  });

  it('does not say what was read twice when the reason already says it', () => {
    const numeric: DeliberationGrades = {
      answers: [
        {
          stageType: 'stage1',
          model: 'sim/b:acc0',
          role: 'council',
          participant: 0,
          grade: {
            verdict: 'incorrect',
            extracted: '467',
            reason: 'read 467 from the FINAL ANSWER: line; expected 504, off by 37',
            grader: 'numeric',
          },
        },
      ],
      final: null,
    };
    render(<GradesPanel grades={numeric} />);
    expect(screen.getByTestId('grades').querySelector('li')?.textContent).toBe(
      '✗ answer sim/b:acc0 — read 467 from the FINAL ANSWER: line; expected 504, off by 37',
    );
  });

  it('says so when no final answer is graded yet', () => {
    render(<GradesPanel grades={{ answers: grades.answers.slice(0, 1), final: null }} />);
    expect(screen.getByTestId('grades').querySelector('.grades-summary')?.textContent).toBe(
      'No final answer graded yet. 1 graded: 1 correct, 0 incorrect, 0 unreadable.',
    );
  });

  it('names each graded row in words', () => {
    expect(
      [
        'stage1',
        'initial_answer',
        'stage3',
        'revision',
        'vote_winner',
        'debate_winner',
        'round_2',
        'round_3_stats',
      ].map(answerKind),
    ).toEqual([
      'answer',
      'answer',
      'synthesis',
      'revised answer',
      'winning answer',
      'winning answer',
      'round 2 estimate',
      'round 3 panel value',
    ]);
  });
});
