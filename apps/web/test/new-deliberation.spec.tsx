/** @jest-environment jsdom */
import { loadConfig } from '@conclave/config';
import { MODE_NAMES, type ModeDescription, type ModelsResponse } from '@conclave/contracts';
import { modeDefinition } from '@conclave/deliberation';
import { act, cleanup, fireEvent, render, screen, within } from '@testing-library/react';
import { ApiFailure, startDeliberation } from '../src/api';
import { NewDeliberation } from '../src/new-deliberation';

jest.mock('../src/api', () => ({
  ...jest.requireActual('../src/api'),
  startDeliberation: jest.fn(),
}));
const start = startDeliberation as jest.MockedFunction<typeof startDeliberation>;

// The same descriptions GET /api/modes serves, from the same code.
const defaults = loadConfig({ AUTH_MODE: 'none' }).defaults;
const modes: ModeDescription[] = MODE_NAMES.map((mode) => modeDefinition(mode)!.describe(defaults));

const noModels: ModelsResponse = { models: [], sources: [], directives: [], promptKinds: [] };

beforeEach(() => {
  start.mockReset();
  global.fetch = jest.fn(async (url: string) => ({
    ok: true,
    status: 200,
    text: async () => JSON.stringify(url === '/api/models' ? noModels : url === '/api/presets' ? [] : modes),
  })) as unknown as typeof fetch;
  location.hash = '';
});

async function renderForm() {
  render(<NewDeliberation />);
  await screen.findByRole('radio', { name: /council/ });
  await act(async () => undefined); // the model list
}

const field = (name: string) => document.querySelector(`[name="${name}"]`) as HTMLInputElement;
/** Types into a field and leaves it (a model picker takes what was typed when it is left). */
const type = (name: string, value: string) => {
  fireEvent.change(field(name), { target: { value } });
  fireEvent.blur(field(name));
};
const errorAt = (name: string) =>
  field(name).closest('.model-picker, label')?.querySelector('[role="alert"]')?.textContent;
const submit = async () => {
  await act(async () => {
    fireEvent.click(screen.getByRole('button', { name: /Deliberate|Ask a follow-up/ }));
  });
};

describe('NewDeliberation', () => {
  it('offers every mode with a one-line description', async () => {
    await renderForm();
    const radios = screen.getAllByRole('radio');
    expect(radios.map((r) => (r as HTMLInputElement).value)).toEqual([...MODE_NAMES]);
    for (const radio of radios) expect(radio.closest('label')?.textContent?.length).toBeGreaterThan(30);
    // the chosen mode's description shows under the choices
    expect(document.querySelector('.mode-summary')?.textContent).toMatch(/chairman synthesizes/);
    fireEvent.click(screen.getByRole('radio', { name: /delphi/ }));
    expect(document.querySelector('.mode-summary')?.textContent).toMatch(/estimation rounds/);
  });

  it('Home and End choose the first and the last mode', async () => {
    await renderForm();
    const council = screen.getByRole('radio', { name: /council/ });
    council.focus();
    fireEvent.keyDown(council, { key: 'End' });
    expect((screen.getByRole('radio', { name: /delphi/ }) as HTMLInputElement).checked).toBe(true);
    expect(document.activeElement).toBe(screen.getByRole('radio', { name: /delphi/ }));
    fireEvent.keyDown(document.activeElement as Element, { key: 'Home' });
    expect((council as HTMLInputElement).checked).toBe(true);
  });

  it('sends on Enter in the question, and writes a new line on Shift+Enter', async () => {
    start.mockResolvedValue({ conversationId: 'c1', messageId: 'm1' });
    await renderForm();
    type('question', 'First line');
    fireEvent.keyDown(field('question'), { key: 'Enter', shiftKey: true });
    expect(start).not.toHaveBeenCalled();
    await act(async () => {
      fireEvent.keyDown(field('question'), { key: 'Enter' });
    });
    expect(start).toHaveBeenCalledWith({ question: 'First line', mode: 'council' }, expect.any(String));
    expect(location.hash).toBe('#/m/m1');
  });

  it("takes Delphi's question type and, for a qualitative question, its options", async () => {
    start.mockResolvedValue({ conversationId: 'c1', messageId: 'm1' });
    await renderForm();
    fireEvent.click(screen.getByRole('radio', { name: /delphi/ }));
    type('question', 'Which layout?');
    expect(field('modeConfig.options')).toBeNull();
    fireEvent.change(field('modeConfig.questionType'), { target: { value: 'qualitative' } });
    type('modeConfig.options', 'Monorepo');
    await submit();
    expect(errorAt('modeConfig.options')).toMatch(/give 2 to 10 options, one a line \(got 1\)/);
    type('modeConfig.options', ' Monorepo \n\nPolyrepo\nHybrid\n');
    await submit();
    expect(start).toHaveBeenLastCalledWith(
      {
        question: 'Which layout?',
        mode: 'delphi',
        modeConfig: { questionType: 'qualitative', options: ['Monorepo', 'Polyrepo', 'Hybrid'] },
      },
      expect.any(String),
    );
    // a numeric override sends no options
    start.mockClear();
    fireEvent.change(field('modeConfig.questionType'), { target: { value: 'numeric' } });
    expect(field('modeConfig.options')).toBeNull();
    await submit();
    expect(start).toHaveBeenLastCalledWith(
      {
        question: 'Which layout?',
        mode: 'delphi',
        modeConfig: { questionType: 'numeric' },
      },
      expect.any(String),
    );
  });

  it("as a follow-up, starts from the previous turn's roster, shown and editable", async () => {
    start.mockResolvedValue({ conversationId: 'c1', messageId: 'm2' });
    render(
      <NewDeliberation
        conversationId="c1"
        mode="council"
        previousConfig={{ councilModels: ['sim/x', 'sim/y'], chairmanModel: 'sim/z', timeoutMs: 60000 }}
      />,
    );
    await screen.findByText(/council: sim\/x, sim\/y · chairman: sim\/z/);
    await act(async () => undefined);
    expect(screen.queryByRole('radio')).toBeNull();
    type('question', 'And then?');
    await submit();
    expect(start).toHaveBeenLastCalledWith(
      {
        question: 'And then?',
        mode: 'council',
        conversationId: 'c1',
        councilModels: ['sim/x', 'sim/y'],
        chairmanModel: 'sim/z',
        modeConfig: { timeoutMs: 60000 },
      },
      expect.any(String),
    );
    type('chairmanModel', 'sim/w');
    expect(screen.getByText(/chairman: sim\/w/)).toBeTruthy();
    type('question', 'Once more?');
    await submit();
    expect(start.mock.calls[1][0]).toMatchObject({
      councilModels: ['sim/x', 'sim/y'],
      chairmanModel: 'sim/w',
    });
  });

  it('waits for the last turn before a follow-up can be sent', async () => {
    render(<NewDeliberation conversationId="c1" mode="council" waitReason="Wait for it." />);
    await screen.findByText('Wait for it.');
    await act(async () => undefined);
    type('question', 'Now?');
    fireEvent.keyDown(field('question'), { key: 'Enter' });
    expect((screen.getByRole('button', { name: 'Ask a follow-up' }) as HTMLButtonElement).disabled).toBe(
      true,
    );
    expect(start).not.toHaveBeenCalled();
  });

  it("shows the roster fields of the chosen mode's roles", async () => {
    await renderForm();
    expect(field('councilModels')).toBeTruthy();
    expect(field('chairmanModel')).toBeTruthy();
    fireEvent.click(screen.getByRole('radio', { name: /jury/ }));
    expect(field('modeConfig.jurorModels')).toBeTruthy();
    expect(field('modeConfig.foremanModel')).toBeTruthy();
    expect(field('content')).toBeTruthy();
    fireEvent.click(screen.getByRole('radio', { name: /delphi/ }));
    expect(field('modeConfig.panelistModels')).toBeTruthy();
    expect(field('modeConfig.facilitatorModel')).toBeTruthy();
    expect(field('modeConfig.maxRounds')).toBeTruthy();
  });

  it('names each problem at its field before anything is sent', async () => {
    await renderForm();
    type('councilModels', 'sim/a');
    type('chairmanModel', 'sim/x, sim/y');
    await submit();
    expect(errorAt('question')).toBe('Question is required');
    expect(errorAt('councilModels')).toMatch(/needs 2 to \d+ models \(got 1\)/);
    expect(errorAt('chairmanModel')).toBe('one chairman model');
    // the model picker refuses what is not a model id as it is typed
    type('councilModels', 'sim/b, gpt4');
    expect(errorAt('councilModels')).toBe('"gpt4" is not a model id of the form provider/name');
    expect(start).not.toHaveBeenCalled();
  });

  it('applies the rules between roles: a foreman is not a juror, a facilitator is not a panelist', async () => {
    await renderForm();
    fireEvent.click(screen.getByRole('radio', { name: /jury/ }));
    type('content', 'Some content');
    type('modeConfig.jurorModels', 'sim/a, sim/b, sim/c');
    type('modeConfig.foremanModel', 'sim/b');
    await submit();
    expect(errorAt('modeConfig.foremanModel')).toBe('Foreman model must not be one of the juror models');

    fireEvent.click(screen.getByRole('radio', { name: /delphi/ }));
    type('question', 'How many?');
    type('modeConfig.panelistModels', 'sim/a sim/b sim/c');
    type('modeConfig.facilitatorModel', 'sim/c');
    await submit();
    expect(errorAt('modeConfig.facilitatorModel')).toBe('The facilitator does NOT participate as a panelist');
    expect(start).not.toHaveBeenCalled();
  });

  it('sends the request in the API shape and goes to the live view', async () => {
    start.mockResolvedValue({ conversationId: 'c1', messageId: 'm1' });
    await renderForm();
    fireEvent.click(screen.getByRole('radio', { name: /delphi/ }));
    type('question', 'How many piano tuners in Chicago?');
    type('modeConfig.panelistModels', 'sim/a, sim/b, sim/c');
    type('modeConfig.maxRounds', '4');
    await submit();
    expect(start).toHaveBeenCalledWith(
      {
        question: 'How many piano tuners in Chicago?',
        mode: 'delphi',
        modeConfig: { panelistModels: ['sim/a', 'sim/b', 'sim/c'], maxRounds: 4 },
      },
      expect.any(String),
    );
    expect(location.hash).toBe('#/m/m1');
  });

  it("shows the server's validation errors next to the fields they name", async () => {
    start.mockRejectedValue(
      new ApiFailure(400, {
        statusCode: 400,
        error: 'Bad Request',
        message: 'Validation failed',
        fields: {
          'modeConfig.maxRounds': 'maxRounds must not be greater than 10',
          'modeConfig.unknown': 'not allowed',
        },
      }),
    );
    await renderForm();
    fireEvent.click(screen.getByRole('radio', { name: /delphi/ }));
    type('question', 'How many?');
    type('modeConfig.maxRounds', '99');
    await submit();
    expect(errorAt('modeConfig.maxRounds')).toBe('maxRounds must not be greater than 10');
    const form = screen.getByRole('form', { name: 'new deliberation' });
    expect(within(form).getByText('modeConfig.unknown: not allowed')).toBeTruthy();
    expect(location.hash).toBe('');
  });

  it('stops retrying a start refused with 503 once the form is gone: nothing started, no navigation', async () => {
    const away = new ApiFailure(
      503,
      {
        statusCode: 503,
        error: 'Service Unavailable',
        message: 'Storage is unavailable right now; try again in 5 seconds',
      },
      1,
    );
    start.mockRejectedValueOnce(away).mockResolvedValue({ conversationId: 'c1', messageId: 'm1' });
    await renderForm();
    fireEvent.click(screen.getByRole('radio', { name: /delphi/ }));
    type('question', 'How many piano tuners in Chicago?');
    type('modeConfig.panelistModels', 'sim/a, sim/b, sim/c');
    await submit();
    expect(start).toHaveBeenCalledTimes(1);
    expect(screen.getByRole('form', { name: 'new deliberation' }).textContent).toContain(
      'The server is temporarily unavailable; retrying in 1 s',
    );
    // The user goes elsewhere (another conversation) while it waits to retry.
    cleanup();
    await act(async () => new Promise((resolve) => setTimeout(resolve, 1500)));
    expect(start).toHaveBeenCalledTimes(1);
    expect(location.hash).toBe('');
  });

  it('sends one idempotency key with every retry of a start refused with 503, and a new one for the next start', async () => {
    const away = new ApiFailure(
      503,
      { statusCode: 503, error: 'Service Unavailable', message: 'The job queue is unavailable right now' },
      1,
    );
    start
      .mockRejectedValueOnce(away)
      .mockRejectedValueOnce(away)
      .mockResolvedValue({ conversationId: 'c1', messageId: 'm1' });
    await renderForm();
    type('question', 'Paid once?');
    await submit();
    await act(async () => new Promise((resolve) => setTimeout(resolve, 2500)));
    expect(start).toHaveBeenCalledTimes(3);
    expect(location.hash).toBe('#/m/m1');
    const keys = start.mock.calls.map((call) => call[1]);
    expect(keys[0]).toMatch(/^[\x21-\x7e]{1,255}$/);
    expect(keys).toEqual([keys[0], keys[0], keys[0]]);
    // The next start the user asks for is another deliberation: another key.
    type('question', 'And another?');
    await submit();
    expect(start).toHaveBeenCalledTimes(4);
    expect(start.mock.calls[3][1]).toMatch(/^web-[0-9a-f]{32}$/);
    expect(start.mock.calls[3][1]).not.toBe(keys[0]);
  });
});
