import { QUESTION_MAX_LENGTH } from '@conclave/contracts';
import type { ChatRequest } from './chat-request';
import { fieldParam, HISTORY_STORED, juryQuestion, planDeliberation } from './deliberation-plan';

const turns = (n: number) => Array.from({ length: n }, (_, i) => ({ question: `Q${i}`, answer: `A${i}` }));

const request = (extra: Partial<ChatRequest> = {}): ChatRequest => ({
  model: 'conclave/council',
  choice: { kind: 'mode', mode: 'council' },
  question: 'And now?',
  questionIndex: 4,
  history: turns(2),
  unpaired: 1,
  systemMessages: 1,
  stream: false,
  includeUsage: false,
  grading: {},
  ...extra,
});

describe('planDeliberation', () => {
  it('council: the question, and the earlier exchanges as turns of the new conversation', () => {
    expect(planDeliberation(request(), 'council', true)).toEqual({
      body: { mode: 'council', question: 'And now?' },
      history: turns(2),
      earlierTurns: { given: 2, passedToPanel: 2, unpaired: 1, systemMessages: 1 },
    });
  });

  it("passes the panel the last ten exchanges, as council's history does, and stores at most fifty", () => {
    const plan = planDeliberation(request({ history: turns(60) }), 'council', true);
    expect(plan.history).toEqual(turns(60).slice(-HISTORY_STORED));
    expect(plan.earlierTurns).toMatchObject({ given: 60, passedToPanel: 10 });
  });

  it('single-turn modes deliberate on the question alone', () => {
    for (const mode of ['vote', 'debate', 'delphi'] as const) {
      const plan = planDeliberation(request({ choice: { kind: 'mode', mode } }), mode, false);
      expect(plan).toEqual({
        body: { mode, question: 'And now?' },
        history: [],
        earlierTurns: { given: 2, passedToPanel: 0, unpaired: 1, systemMessages: 1 },
      });
    }
  });

  it('jury: the last user message is the content under evaluation', () => {
    const content = 'A paragraph to judge.';
    expect(planDeliberation(request({ question: content }), 'jury', false).body).toEqual({
      mode: 'jury',
      question: content,
      modeConfig: { content },
    });
    const long = 'x'.repeat(QUESTION_MAX_LENGTH + 1);
    expect(juryQuestion(long)).toBe(`Evaluate the content (${long.length} characters)`);
    expect(planDeliberation(request({ question: long }), 'jury', false).body.modeConfig).toEqual({
      content: long,
    });
  });

  it('a preset: its name, the mode and roster left to it', () => {
    const preset = request({ choice: { kind: 'preset', name: 'fast-trio' } });
    expect(planDeliberation(preset, 'council', true).body).toEqual({
      preset: 'fast-trio',
      question: 'And now?',
    });
    expect(planDeliberation(preset, 'jury', false).body).toEqual({
      preset: 'fast-trio',
      question: 'And now?',
      modeConfig: { content: 'And now?' },
    });
  });
});

describe('planDeliberation with an expected answer (issue 37)', () => {
  it('passes expected and grader on as the REST request fields, for a mode or a preset', () => {
    const grading = { expected: '42', grader: { type: 'numeric' } };
    expect(planDeliberation(request({ grading }), 'council', true).body).toEqual({
      mode: 'council',
      question: 'And now?',
      expected: '42',
      grader: { type: 'numeric' },
    });
    const preset = request({ choice: { kind: 'preset', name: 'fast-trio' }, grading: { expected: 7 } });
    expect(planDeliberation(preset, 'vote', false).body).toEqual({
      preset: 'fast-trio',
      question: 'And now?',
      expected: 7,
    });
  });
});

describe('fieldParam', () => {
  it('names the /v1 parameter a request field came from', () => {
    const param = fieldParam({ questionIndex: 3 });
    expect(param('question')).toBe('messages[3].content');
    expect(param('modeConfig.content')).toBe('messages[3].content');
    expect(param('preset')).toBe('model');
    expect(param('mode')).toBe('model');
    expect(param('modeConfig.jurorModels')).toBe('model');
    expect(param('councilModels')).toBe('model');
    expect(param('body')).toBeNull();
    expect(param('Idempotency-Key')).toBeNull();
    expect(param('expected')).toBe('expected');
    expect(param('grader')).toBe('grader');
    expect(param('grader.absoluteTolerance')).toBe('grader.absoluteTolerance');
  });
});
