import type { DeliberationGrades } from '@conclave/contracts';
import { parseInvocation } from './args';
import { buildRequest } from './ask';
import { UsageError } from './errors';
import { gradeLines, graderFlag } from './grades';

describe('ask --expected / --grader (issue 37)', () => {
  it('takes them on ask only, and puts them in the request as given', () => {
    expect(parseInvocation(['ask', 'q', '--expected', '42', '--grader', 'numeric'], {})).toMatchObject({
      flags: { expected: '42', grader: 'numeric' },
    });
    expect(() => parseInvocation(['batch', 'list', '--expected', '4'], {})).toThrow(
      'batch list takes no --expected',
    );
    expect(buildRequest('q', { expected: '42', grader: { type: 'numeric' } })).toEqual({
      question: 'q',
      expected: '42',
      grader: { type: 'numeric' },
    });
    expect(buildRequest('q', {})).toEqual({ question: 'q' });
  });

  it('reads --grader as a type or a JSON object, refusing anything else', () => {
    expect(graderFlag(undefined)).toBeUndefined();
    expect(graderFlag('numeric')).toEqual({ type: 'numeric' });
    expect(graderFlag('{"type":"numeric","absoluteTolerance":0.5}')).toEqual({
      type: 'numeric',
      absoluteTolerance: 0.5,
    });
    expect(() => graderFlag('{"type":')).toThrow(UsageError);
    expect(() => graderFlag('{"type":')).toThrow('--grader is not valid JSON');
    expect(() => graderFlag('[1]')).toThrow(UsageError);
    expect(() => graderFlag('num eric')).toThrow(/grader type/);
  });

  it('prints the final verdict, then every answer marked ✓ / ✗ / ? with what was read and why', () => {
    const grades: DeliberationGrades = {
      answers: [
        {
          stageType: 'stage1',
          model: 'sim/a',
          role: 'council',
          participant: 0,
          grade: { verdict: 'correct', extracted: '42', reason: 'read 42', grader: 'numeric' },
        },
        {
          stageType: 'stage1',
          model: 'sim/b',
          role: 'council',
          participant: 1,
          grade: { verdict: 'incorrect', extracted: '41', reason: 'off by 1', grader: 'numeric' },
        },
        {
          stageType: 'stage1',
          model: null,
          role: null,
          participant: null,
          grade: { verdict: 'unreadable', reason: 'the reply has no number\u001b[2J', grader: 'numeric' },
        },
        {
          stageType: 'stage3',
          model: 'sim/chair',
          role: 'chairman',
          participant: null,
          grade: { verdict: 'correct', extracted: '42', reason: 'read 42', grader: 'numeric' },
        },
      ],
      final: {
        stageType: 'stage3',
        model: 'sim/chair',
        role: 'chairman',
        participant: null,
        grade: { verdict: 'correct', extracted: '42', reason: 'read 42', grader: 'numeric' },
      },
    };
    expect(gradeLines(grades)).toEqual([
      "graded: the panel's final answer is correct ✓",
      '  final ✓ correct "42": chairman sim/chair [stage3] (read 42)',
      '  answers (4):',
      '    ✓ correct "42": council sim/a [stage1] (read 42)',
      '    ✗ incorrect "41": council sim/b [stage1] (off by 1)',
      '    ? unreadable: the panel [stage1] (the reply has no number[2J)',
      '    ✓ correct "42": chairman sim/chair [stage3] (read 42)',
    ]);
    expect(gradeLines({ answers: [], final: null })).toEqual([
      'graded: the panel has no final answer to grade',
      '  answers (0):',
    ]);
    expect(gradeLines(undefined)).toEqual([]);
  });
});
