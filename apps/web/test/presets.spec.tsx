/** @jest-environment jsdom */
import { loadConfig } from '@conclave/config';
import { MODE_NAMES, type ModeDescription, type ModelsResponse, type Preset } from '@conclave/contracts';
import { modeDefinition } from '@conclave/deliberation';
import { act, fireEvent, render, screen, within } from '@testing-library/react';
import { startDeliberation } from '../src/api';
import { NewDeliberation } from '../src/new-deliberation';
import { presetRequest } from '../src/presets';

jest.mock('../src/api', () => ({
  ...jest.requireActual('../src/api'),
  startDeliberation: jest.fn(),
}));
const start = startDeliberation as jest.MockedFunction<typeof startDeliberation>;

// The same descriptions GET /api/modes serves, from the same code.
const defaults = loadConfig({ AUTH_MODE: 'none' }).defaults;
const modes: ModeDescription[] = MODE_NAMES.map((mode) => modeDefinition(mode)!.describe(defaults));
const noModels: ModelsResponse = { models: [], sources: [], directives: [], promptKinds: [] };

const at = '2025-01-01T00:00:00.000Z';
const saved: Preset[] = [
  {
    name: 'jury-3',
    mode: 'jury',
    modeConfig: { jurorModels: ['sim/a', 'sim/b', 'sim/c'], foremanModel: 'sim/f', timeoutMs: 20_000 },
    createdAt: at,
    updatedAt: at,
  },
  {
    name: 'trio',
    mode: 'council',
    councilModels: ['sim/x', 'sim/y'],
    chairmanModel: 'sim/z',
    modeConfig: { timeoutMs: 61_000 },
    createdAt: at,
    updatedAt: at,
  },
];

type Answer = { status: number; body?: unknown };
let onSave: (body: unknown) => Answer;
let onDelete: (name: string) => Answer;
const posted: unknown[] = [];
const deleted: string[] = [];

beforeEach(() => {
  start.mockReset();
  posted.length = 0;
  deleted.length = 0;
  onSave = (body) => ({ status: 201, body: { ...(body as object), createdAt: at, updatedAt: at } });
  onDelete = () => ({ status: 204 });
  global.fetch = jest.fn(async (url: string, init?: RequestInit) => {
    const method = init?.method ?? 'GET';
    let answer: Answer = { status: 404, body: { statusCode: 404, error: 'Not Found', message: 'no' } };
    if (url === '/api/modes') answer = { status: 200, body: modes };
    if (url === '/api/models') answer = { status: 200, body: noModels };
    if (url === '/api/presets' && method === 'GET') answer = { status: 200, body: saved };
    if (url === '/api/presets' && method === 'POST') {
      const body: unknown = JSON.parse(String(init?.body));
      posted.push(body);
      answer = onSave(body);
    }
    if (url.startsWith('/api/presets/') && method === 'DELETE') {
      const name = decodeURIComponent(url.slice('/api/presets/'.length));
      deleted.push(name);
      answer = onDelete(name);
    }
    return {
      ok: answer.status < 400,
      status: answer.status,
      text: async () => (answer.body === undefined ? '' : JSON.stringify(answer.body)),
    };
  }) as unknown as typeof fetch;
  location.hash = '';
});

const field = (name: string) => document.querySelector(`[name="${name}"]`) as HTMLInputElement;
const type = (name: string, value: string) => {
  fireEvent.change(field(name), { target: { value } });
  fireEvent.blur(field(name));
};
const errorAt = (name: string) =>
  field(name).closest('.model-picker, label')?.querySelector('[role="alert"]')?.textContent;
const picker = () => screen.getByRole('combobox', { name: /^Preset/ }) as HTMLSelectElement;
const choose = (name: string) => fireEvent.change(picker(), { target: { value: name } });
const submit = () =>
  act(async () => {
    fireEvent.click(screen.getByRole('button', { name: /Deliberate|Ask a follow-up/ }));
  });
const savePreset = () =>
  act(async () => {
    fireEvent.click(screen.getByRole('button', { name: 'Save preset' }));
  });

async function renderForm() {
  render(<NewDeliberation />);
  await screen.findByRole('radio', { name: /council/ });
  await screen.findByRole('option', { name: 'trio (council)' });
}

describe('presets in the form', () => {
  it('offers the saved presets; choosing one fills the mode, roster and options, which stay editable', async () => {
    start.mockResolvedValue({ conversationId: 'c1', messageId: 'm1' });
    await renderForm();
    expect(
      within(picker())
        .getAllByRole('option')
        .map((o) => o.textContent),
    ).toEqual(['None', 'jury-3 (jury)', 'trio (council)']);
    expect(picker()).toHaveProperty('labels.length', 1);

    choose('jury-3');
    expect((screen.getByRole('radio', { name: /jury/ }) as HTMLInputElement).checked).toBe(true);
    expect(field('modeConfig.timeoutMs').value).toBe('20000');
    type('content', 'A draft to judge');
    await submit();
    expect(start).toHaveBeenLastCalledWith(
      {
        question: 'Evaluate this content',
        mode: 'jury',
        modeConfig: {
          jurorModels: ['sim/a', 'sim/b', 'sim/c'],
          foremanModel: 'sim/f',
          timeoutMs: 20000,
          content: 'A draft to judge',
        },
      },
      expect.any(String),
    );

    choose('trio');
    expect((screen.getByRole('radio', { name: /council/ }) as HTMLInputElement).checked).toBe(true);
    type('question', 'Which sort?');
    type('chairmanModel', 'sim/w');
    type('modeConfig.timeoutMs', '30000');
    await submit();
    expect(start).toHaveBeenLastCalledWith(
      {
        question: 'Which sort?',
        mode: 'council',
        councilModels: ['sim/x', 'sim/y'],
        chairmanModel: 'sim/w',
        modeConfig: { timeoutMs: 30000 },
      },
      expect.any(String),
    );
    // choosing another mode by hand leaves the preset
    fireEvent.click(screen.getByRole('radio', { name: /^vote/ }));
    expect(picker().value).toBe('');
  });

  it('deletes the chosen preset after asking once more; the form keeps what it filled in', async () => {
    await renderForm();
    expect(screen.queryByRole('button', { name: 'Delete preset…' })).toBeNull();
    choose('trio');
    fireEvent.click(screen.getByRole('button', { name: 'Delete preset…' }));
    expect(screen.getByText(/Delete preset “trio”\?/)).toBeTruthy();
    // Keep: nothing is sent.
    fireEvent.click(screen.getByRole('button', { name: 'Keep' }));
    expect(deleted).toEqual([]);
    fireEvent.click(screen.getByRole('button', { name: 'Delete preset…' }));
    await act(async () => {
      fireEvent.click(screen.getByRole('button', { name: 'Delete' }));
    });
    expect(deleted).toEqual(['trio']);
    expect(screen.getByText('Deleted preset "trio".')).toBeTruthy();
    expect(
      within(picker())
        .getAllByRole('option')
        .map((o) => o.textContent),
    ).toEqual(['None', 'jury-3 (jury)']);
    expect(picker().value).toBe('');
    expect(field('chairmanModel').value).toBe('sim/z');
  });

  it('says why a preset was not deleted, and treats one already gone as deleted', async () => {
    await renderForm();
    onDelete = () => ({
      status: 503,
      body: { statusCode: 503, error: 'Service Unavailable', message: 'Try later' },
    });
    choose('jury-3');
    fireEvent.click(screen.getByRole('button', { name: 'Delete preset…' }));
    await act(async () => {
      fireEvent.click(screen.getByRole('button', { name: 'Delete' }));
    });
    expect(screen.getByText('Preset "jury-3" was not deleted: Try later')).toBeTruthy();
    expect(within(picker()).getAllByRole('option')).toHaveLength(3);
    onDelete = () => ({
      status: 404,
      body: { statusCode: 404, error: 'Not Found', message: 'preset jury-3' },
    });
    fireEvent.click(screen.getByRole('button', { name: 'Delete preset…' }));
    await act(async () => {
      fireEvent.click(screen.getByRole('button', { name: 'Delete' }));
    });
    expect(screen.getByText('Deleted preset "jury-3".')).toBeTruthy();
    expect(within(picker()).getAllByRole('option')).toHaveLength(2);
  });

  it('saves the current mode, roster and options under a name, without the question, and offers it', async () => {
    await renderForm();
    fireEvent.click(screen.getByRole('radio', { name: /delphi/ }));
    type('question', 'How many piano tuners?');
    type('modeConfig.panelistModels', 'sim/a, sim/b, sim/c');
    type('modeConfig.maxRounds', '4');
    type('presetName', 'tuners');
    await savePreset();
    expect(posted).toEqual([
      {
        name: 'tuners',
        mode: 'delphi',
        modeConfig: { panelistModels: ['sim/a', 'sim/b', 'sim/c'], maxRounds: 4 },
      },
    ]);
    expect(screen.getByRole('status').textContent).toBe('Saved as preset "tuners".');
    expect(picker().value).toBe('tuners');
    expect(within(picker()).getByRole('option', { name: 'tuners (delphi)' })).toBeTruthy();
    expect(start).not.toHaveBeenCalled();
  });

  it('Enter in the name saves the preset; it does not start a deliberation', async () => {
    await renderForm();
    type('question', 'Q?');
    type('presetName', 'plain');
    await act(async () => {
      fireEvent.keyDown(field('presetName'), { key: 'Enter' });
    });
    expect(posted).toEqual([{ name: 'plain', mode: 'council' }]);
    expect(start).not.toHaveBeenCalled();
  });

  it("shows why a preset was not saved: a name that cannot be one, the server's field errors, a limit", async () => {
    await renderForm();
    type('presetName', 'My Preset');
    await savePreset();
    expect(posted).toEqual([]);
    expect(errorAt('presetName')).toMatch(/lowercase letters, digits.*no slashes, spaces or capitals/);
    expect(field('presetName').getAttribute('aria-invalid')).toBe('true');

    onSave = () => ({
      status: 400,
      body: {
        statusCode: 400,
        error: 'Bad Request',
        message: 'Invalid request',
        fields: { councilModels: 'councilModels must contain no more than 6 elements' },
      },
    });
    type('presetName', 'big');
    await savePreset();
    expect(errorAt('councilModels')).toBe('councilModels must contain no more than 6 elements');
    expect(errorAt('presetName')).toBe('The preset was not saved: see the fields marked.');

    onSave = () => ({
      status: 409,
      body: { statusCode: 409, error: 'Conflict', message: 'You have 100 presets, the most one user keeps' },
    });
    await savePreset();
    expect(errorAt('presetName')).toBe('You have 100 presets, the most one user keeps');
    expect(screen.getByRole('status').textContent).toBe('');
  });

  it("as a follow-up, offers only the conversation's mode's presets and keeps the mode", async () => {
    start.mockResolvedValue({ conversationId: 'c1', messageId: 'm2' });
    render(
      <NewDeliberation
        conversationId="c1"
        mode="council"
        previousConfig={{ councilModels: ['sim/p', 'sim/q'] }}
      />,
    );
    await screen.findByRole('option', { name: 'trio' });
    expect(
      within(picker())
        .getAllByRole('option')
        .map((o) => o.textContent),
    ).toEqual(['None', 'trio']);
    choose('trio');
    await screen.findByText(/council: sim\/x, sim\/y · chairman: sim\/z/);
    type('question', 'And then?');
    await submit();
    expect(start).toHaveBeenLastCalledWith(
      {
        question: 'And then?',
        mode: 'council',
        conversationId: 'c1',
        councilModels: ['sim/x', 'sim/y'],
        chairmanModel: 'sim/z',
        modeConfig: { timeoutMs: 61000 },
      },
      expect.any(String),
    );
  });
});

describe('presetRequest', () => {
  it("keeps the mode, roster and options, not the question, the conversation or jury's content", () => {
    expect(
      presetRequest(' jury-x ', {
        question: 'Evaluate',
        conversationId: 'c1',
        mode: 'jury',
        modeConfig: { content: 'C', originalQuestion: 'Q', jurorModels: ['sim/a', 'sim/b', 'sim/c'] },
      }),
    ).toEqual({ name: 'jury-x', mode: 'jury', modeConfig: { jurorModels: ['sim/a', 'sim/b', 'sim/c'] } });
    expect(presetRequest('j', { question: 'Q', mode: 'jury', modeConfig: { content: 'C' } })).toEqual({
      name: 'j',
      mode: 'jury',
    });
  });
});
