/** @jest-environment jsdom */
import { render, screen } from '@testing-library/react';
import { DegradedNotice, KeptStage } from '../src/shortfall';

describe('DegradedNotice', () => {
  it('says who is missing and why in one line, and lists each when there are several', () => {
    render(
      <DegradedNotice
        degraded={{
          asked: 3,
          answered: 2,
          summary: '2 of 3 answered — sim/x: upstream error',
          missing: [
            { model: 'sim/x', role: 'council', stage: 'stage1', kind: 'failed', why: 'upstream error' },
            {
              model: 'sim/y',
              role: 'council',
              stage: 'stage2',
              kind: 'unreadable',
              why: 'its ranking could not be read',
            },
          ],
        }}
      />,
    );
    const note = screen.getByRole('note', { name: 'missing participants' });
    expect(note.querySelector('.degraded-summary')?.textContent).toBe(
      'incomplete panel 2 of 3 answered — sim/x: upstream error',
    );
    expect([...note.querySelectorAll('li')].map((li) => li.textContent)).toEqual([
      'sim/x (council, stage1) failed upstream error',
      'sim/y (council, stage2) unreadable its ranking could not be read',
    ]);
  });
});

describe('KeptStage', () => {
  it('names each kept answer (shown whole with its call), its content not repeated, and who was cut', () => {
    const { container } = render(
      <KeptStage
        partial={{
          reason: 'failed',
          why: 'The deliberation ran past its 600 s limit and was stopped.',
          stage: 'round_2',
          answers: [
            {
              stage: 'round_2',
              participant: 1,
              model: 'sim/p1',
              content: 'ESTIMATE: 4\n<img src=x onerror=alert(1)>',
              finishReason: 'length',
            },
          ],
          cut: [
            {
              model: 'sim/p2',
              role: 'panelist',
              stage: 'round_2',
              kind: 'cut',
              why: 'stopped: the deliberation ended',
            },
          ],
        }}
      />,
    );
    expect(screen.getByRole('heading', { level: 3 }).textContent).toBe(
      'Kept from the unfinished stage round_2',
    );
    expect(container.textContent).toContain(
      'The deliberation failed (The deliberation ran past its 600 s limit and was stopped). The answers that had arrived are kept, each with its call above',
    );
    expect(container.querySelector('.kept-answer')?.textContent).toBe('sim/p1 answeredcut at length limit');
    expect(container.textContent).not.toContain('ESTIMATE');
    expect(container.querySelector('img')).toBeNull();
    expect(container.querySelector('.kept-cut')?.textContent).toBe(
      'sim/p2 (panelist) cut stopped: the deliberation ended',
    );
  });

  it('says so when no call of the stage had finished', () => {
    const { container } = render(
      <KeptStage partial={{ reason: 'cancelled', why: null, stage: 'stage1', answers: [], cut: [] }} />,
    );
    expect(container.textContent).toContain(
      'The deliberation was stopped. No call of this stage had finished.',
    );
    expect(container.querySelector('.kept-answers')).toBeNull();
  });
});
