import { MAX_MESSAGES, pairTurns, parseChatRequest, parseModelId, type ChatRequest } from './chat-request';

const user = (content: unknown) => ({ role: 'user', content });
const assistant = (content: unknown) => ({ role: 'assistant', content });
const body = (extra: Record<string, unknown> = {}) => ({
  model: 'conclave/council',
  messages: [user('What now?')],
  ...extra,
});

function parsed(input: unknown): ChatRequest {
  const outcome = parseChatRequest(input);
  if (!outcome.ok) throw new Error(`refused: ${outcome.error.message}`);
  return outcome.value;
}

function refused(input: unknown) {
  const outcome = parseChatRequest(input);
  if (outcome.ok) throw new Error('accepted');
  return outcome.error;
}

describe('model ids', () => {
  it('names a mode or a preset, nothing else', () => {
    expect(parseModelId('conclave/council')).toEqual({ kind: 'mode', mode: 'council' });
    expect(parseModelId('conclave/delphi')).toEqual({ kind: 'mode', mode: 'delphi' });
    expect(parseModelId('conclave/preset/fast-trio')).toEqual({ kind: 'preset', name: 'fast-trio' });
    for (const id of [
      'council',
      'conclave/',
      'conclave/chat',
      'gpt-4o',
      'conclave/preset/',
      'conclave/preset/A',
      'conclave/preset/a/b',
    ]) {
      expect([id, parseModelId(id)]).toEqual([id, null]);
    }
  });
});

describe('parseChatRequest', () => {
  it('takes the last user message as the question, a string or text parts', () => {
    expect(parsed(body())).toMatchObject({
      model: 'conclave/council',
      choice: { kind: 'mode', mode: 'council' },
      question: 'What now?',
      questionIndex: 0,
      history: [],
      stream: false,
      includeUsage: false,
    });
    const parts = parsed(
      body({
        messages: [
          user([
            { type: 'text', text: 'One' },
            { type: 'text', text: 'two' },
          ]),
        ],
      }),
    );
    expect(parts.question).toBe('One\ntwo');
  });

  it('pairs earlier messages into exchanges and counts system messages apart', () => {
    const request = parsed(
      body({
        messages: [
          { role: 'system', content: 'Be brief.' },
          user('Q1'),
          assistant('A1'),
          { role: 'developer', content: 'Be kind.' },
          user('Q2'),
          user('Q2 again'),
          assistant([{ type: 'text', text: 'A2' }]),
          assistant('A2 more'),
          user('Q3'),
        ],
      }),
    );
    expect(request.history).toEqual([
      { question: 'Q1', answer: 'A1' },
      { question: 'Q2\n\nQ2 again', answer: 'A2\n\nA2 more' },
    ]);
    expect(request).toMatchObject({ question: 'Q3', questionIndex: 8, systemMessages: 2, unpaired: 0 });
  });

  it('joins user messages left without an answer at the end into the question', () => {
    const request = parsed(
      body({ messages: [user('Q1'), assistant('A1'), user('Part one.'), user('Part two.')] }),
    );
    expect(request.question).toBe('Part one.\n\nPart two.');
    expect(request.history).toEqual([{ question: 'Q1', answer: 'A1' }]);
  });

  it('leaves out an answer without a question and an exchange with an empty side, and counts them', () => {
    expect(
      pairTurns([
        { role: 'assistant', text: 'Hello!' },
        { role: 'user', text: 'Q' },
        { role: 'assistant', text: '' },
      ]),
    ).toEqual({
      history: [],
      unpaired: 3,
    });
    const request = parsed(
      body({ messages: [assistant('Hi, how can I help?'), user('Q1'), assistant(null), user('Q2')] }),
    );
    expect(request).toMatchObject({ history: [], unpaired: 3, question: 'Q2' });
  });

  it('takes the grading extension fields expected and grader as sent, for the REST validator (issue 37)', () => {
    expect(parsed(body({ expected: '42', grader: { type: 'numeric' } }))).toMatchObject({
      grading: { expected: '42', grader: { type: 'numeric' } },
    });
    expect(parsed(body({ expected: 'B' })).grading).toEqual({ expected: 'B' });
    expect(parsed(body({ expected: null, grader: null })).grading).toEqual({});
    expect(parsed(body()).grading).toEqual({});
  });

  it('accepts the stream options and the sampling parameters, checking their types', () => {
    expect(parsed(body({ stream: true, stream_options: { include_usage: true } }))).toMatchObject({
      stream: true,
      includeUsage: true,
    });
    const sampling = {
      temperature: 0.7,
      top_p: 1,
      max_tokens: 100,
      max_completion_tokens: 100,
      stop: ['\n'],
      seed: 3,
      presence_penalty: 0,
      frequency_penalty: 0,
      logit_bias: { '50256': -100 },
      user: 'u-1',
      metadata: { app: 'x' },
      store: false,
      parallel_tool_calls: false,
      n: 1,
      logprobs: false,
      tools: [],
      tool_choice: 'none',
      response_format: { type: 'text' },
      modalities: ['text'],
      service_tier: 'auto',
      reasoning_effort: 'low',
      stream: null,
    };
    expect(parsed(body(sampling)).question).toBe('What now?');
    expect(refused(body({ temperature: 'hot' }))).toMatchObject({
      status: 400,
      param: 'temperature',
      code: 'invalid_type',
    });
    expect(refused(body({ stop: [1] }))).toMatchObject({ param: 'stop' });
    expect(refused(body({ max_tokens: 1.5 }))).toMatchObject({ param: 'max_tokens' });
  });

  it.each([
    ['tools', [{ type: 'function', function: { name: 'f' } }]],
    ['tool_choice', 'required'],
    ['functions', [{ name: 'f' }]],
    ['function_call', { name: 'f' }],
    ['n', 2],
    ['logprobs', true],
    ['top_logprobs', 3],
    ['response_format', { type: 'json_object' }],
    ['audio', { voice: 'alloy', format: 'mp3' }],
    ['modalities', ['text', 'audio']],
    ['prediction', { type: 'content', content: 'x' }],
    ['web_search_options', {}],
  ])('refuses %s, which Conclave cannot honour, by name', (name, value) => {
    expect(refused(body({ [name]: value }))).toMatchObject({
      status: 400,
      type: 'invalid_request_error',
      param: name,
      code: 'unsupported_parameter',
    });
  });

  it('refuses unknown parameters by name, as OpenAI does', () => {
    expect(refused(body({ frobnicate: 1 }))).toMatchObject({
      param: 'frobnicate',
      code: 'unknown_parameter',
    });
    expect(refused(JSON.parse('{"model":"conclave/council","messages":[],"__proto__":{}}'))).toMatchObject({
      param: '__proto__',
    });
    expect(refused(body({ stream: true, stream_options: { include_usage: true, extra: 1 } }))).toMatchObject({
      param: 'stream_options.extra',
    });
  });

  it.each([
    ['no model', { messages: [user('x')] }, 'model', 'missing_required_parameter'],
    ['a model of the wrong type', { model: 1, messages: [user('x')] }, 'model', 'invalid_type'],
    ['an unknown model', { model: 'gpt-4o', messages: [user('x')] }, 'model', 'model_not_found'],
    ['no messages', { model: 'conclave/vote' }, 'messages', 'missing_required_parameter'],
    ['messages not an array', body({ messages: { 0: user('x') } }), 'messages', 'invalid_type'],
    ['no message', body({ messages: [] }), 'messages', 'invalid_value'],
    [
      'too many messages',
      body({ messages: Array(MAX_MESSAGES + 1).fill(user('x')) }),
      'messages',
      'invalid_value',
    ],
    ['a message that is not an object', body({ messages: ['hi'] }), 'messages[0]', 'invalid_type'],
    [
      'an unknown role',
      body({ messages: [{ role: 'robot', content: 'x' }] }),
      'messages[0].role',
      'invalid_value',
    ],
    [
      'a tool result',
      body({ messages: [{ role: 'tool', content: 'x' }] }),
      'messages[0].role',
      'unsupported_value',
    ],
    [
      'an unknown message field',
      body({ messages: [{ ...user('x'), foo: 1 }] }),
      'messages[0].foo',
      'unknown_parameter',
    ],
    [
      'a user message without content',
      body({ messages: [{ role: 'user' }] }),
      'messages[0].content',
      'missing_required_parameter',
    ],
    ['content of the wrong type', body({ messages: [user(42)] }), 'messages[0].content', 'invalid_type'],
    [
      'an image part',
      body({ messages: [user([{ type: 'image_url', image_url: { url: 'x' } }])] }),
      'messages[0].content[0]',
      'unsupported_content',
    ],
    [
      'a part without a type',
      body({ messages: [user([{ text: 'x' }])] }),
      'messages[0].content[0]',
      'invalid_type',
    ],
    [
      'NUL in an earlier message',
      body({ messages: [user('a\u0000b'), assistant('c'), user('d')] }),
      'messages[0].content',
      'invalid_value',
    ],
    ['an unpaired surrogate', body({ messages: [user('a\ud800b')] }), 'messages[0].content', 'invalid_value'],
    [
      'an assistant message last',
      body({ messages: [user('q'), assistant('a')] }),
      'messages[1].role',
      'invalid_value',
    ],
    ['an empty question', body({ messages: [user('  \n ')] }), 'messages[0].content', 'invalid_value'],
    [
      'assistant tool calls',
      body({ messages: [{ role: 'assistant', content: null, tool_calls: [{ id: 'x' }] }, user('q')] }),
      'messages[0].tool_calls',
      'unsupported_parameter',
    ],
    ['stream of the wrong type', body({ stream: 1 }), 'stream', 'invalid_type'],
    [
      'stream_options without stream',
      body({ stream_options: { include_usage: true } }),
      'stream_options',
      'invalid_value',
    ],
    [
      'include_usage of the wrong type',
      body({ stream: true, stream_options: { include_usage: 'yes' } }),
      'stream_options.include_usage',
      'invalid_type',
    ],
  ])('refuses %s, naming the parameter', (_what, input, param, code) => {
    expect(refused(input)).toMatchObject({ status: 400, type: 'invalid_request_error', param, code });
  });

  it.each([
    [{ model: 1, messages: [user('x')] }, "Invalid type for 'model': expected a string"],
    [{ model: 'conclave/vote' }, "Missing required parameter: 'messages'"],
    [body({ messages: { 0: user('x') } }), "Invalid type for 'messages': expected an array"],
    [body({ messages: [{ role: 'user' }] }), "Missing required parameter: 'messages[0].content'"],
    [
      body({ messages: [user(42)] }),
      "Invalid type for 'messages[0].content': expected a string or an array of text parts",
    ],
    [
      body({ messages: [user([{ type: 'text', text: 1 }])] }),
      "Invalid type for 'messages[0].content[0].text': expected a string",
    ],
    [
      body({ messages: [assistant([{ type: 'refusal', refusal: 1 }]), user('q')] }),
      "Invalid type for 'messages[0].content[0].refusal': expected a string",
    ],
    [
      body({ messages: [user([{ type: 'refusal', refusal: 'no' }])] }),
      '\'messages[0].content[0]\' is a "refusal" part: Conclave takes text only (parts of type "text")',
    ],
    [
      body({ messages: [{ role: 'user', content: 'q', name: 1 }] }),
      "Invalid type for 'messages[0].name': expected a string",
    ],
    [
      body({ messages: [{ role: 'assistant', content: 'a', refusal: 1 }, user('q')] }),
      "Invalid type for 'messages[0].refusal': expected a string",
    ],
    [body({ stream: 1 }), "Invalid type for 'stream': expected a boolean"],
    [body({ temperature: 'warm' }), "Invalid type for 'temperature': expected a number"],
    [body({ stream: true, stream_options: 1 }), "Invalid type for 'stream_options': expected an object"],
    [
      body({ stream: true, stream_options: { include_usage: 1 } }),
      "Invalid type for 'stream_options.include_usage': expected a boolean",
    ],
  ])('words a refusal of %j as OpenAI does', (input, message) => {
    expect(refused(input).message).toBe(message);
  });

  it('refuses what is not an object, and nesting deeper than any request needs', () => {
    for (const input of [null, 'x', [1], 3])
      expect(refused(input)).toMatchObject({ status: 400, param: null });
    let deep: unknown = 'x';
    for (let i = 0; i < 10_000; i++) deep = [deep];
    expect(refused(body({ metadata: deep }))).toMatchObject({ status: 400, code: 'invalid_value' });
  });

  it('quotes what a client sent in its messages short and escaped', () => {
    const message = refused({ model: `gpt\u0000${'x'.repeat(500)}`, messages: [user('q')] }).message;
    expect(message).toContain('"gpt\\u0000xxx');
    expect(message.length).toBeLessThan(400);
  });
});
