/** @jest-environment jsdom */
import { loadConfig } from '@conclave/config';
import { MODE_NAMES, type ModeDescription } from '@conclave/contracts';
import { modeDefinition } from '@conclave/deliberation';
import { act, fireEvent, render, screen, within } from '@testing-library/react';
import { ApiFailure, startDeliberation } from '../src/api';
import { NewDeliberation } from '../src/App';

jest.mock('../src/api', () => ({
  ...jest.requireActual('../src/api'),
  startDeliberation: jest.fn(),
}));
const start = startDeliberation as jest.MockedFunction<typeof startDeliberation>;

// The same descriptions GET /api/modes serves, from the same code.
const defaults = loadConfig({ AUTH_MODE: 'none' }).defaults;
const modes: ModeDescription[] = MODE_NAMES.map((mode) => modeDefinition(mode)!.describe(defaults));

beforeEach(() => {
  start.mockReset();
  global.fetch = jest.fn(async () => ({
    ok: true,
    status: 200,
    text: async () => JSON.stringify(modes),
  })) as unknown as typeof fetch;
  location.hash = '';
});

async function renderForm() {
  render(<NewDeliberation />);
  await screen.findByRole('radio', { name: /council/ });
}

const field = (name: string) => document.querySelector(`[name="${name}"]`) as HTMLInputElement;
const type = (name: string, value: string) => fireEvent.change(field(name), { target: { value } });
const errorAt = (name: string) => field(name).closest('label')?.querySelector('[role="alert"]')?.textContent;
const submit = async () => {
  await act(async () => {
    fireEvent.click(screen.getByRole('button', { name: /Deliberate/ }));
  });
};

describe('NewDeliberation', () => {
  it('offers every mode with a one-line description', async () => {
    await renderForm();
    const radios = screen.getAllByRole('radio');
    expect(radios.map((r) => (r as HTMLInputElement).value)).toEqual([...MODE_NAMES]);
    for (const radio of radios) expect(radio.closest('label')?.textContent?.length).toBeGreaterThan(30);
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
    type('councilModels', 'sim/a, gpt4');
    await submit();
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
    expect(start).toHaveBeenCalledWith({
      question: 'How many piano tuners in Chicago?',
      mode: 'delphi',
      modeConfig: { panelistModels: ['sim/a', 'sim/b', 'sim/c'], maxRounds: 4 },
    });
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
});
