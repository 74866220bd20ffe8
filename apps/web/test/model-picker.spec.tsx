/** @jest-environment jsdom */
import type { ModelsResponse } from '@conclave/contracts';
import { act, fireEvent, render, screen, within } from '@testing-library/react';
import { useState } from 'react';
import {
  formatContext,
  formatPricing,
  ModelPicker,
  resetModelCatalogue,
  type RosterPickerProps,
} from '../src/model-picker';

const catalogue: ModelsResponse = {
  models: [
    { id: 'sim/athena', provider: 'simulated', name: 'Athena (simulated)', description: 'Simulated.' },
    { id: 'sim/hermes', provider: 'simulated', name: 'Hermes (simulated)' },
    { id: 'sim/chairman', provider: 'simulated', name: 'Chairman (simulated)' },
    {
      id: 'openai/gpt-4o',
      provider: 'openrouter',
      name: 'OpenAI: GPT-4o',
      contextLength: 128000,
      pricing: { promptPerMillionUsd: 2.5, completionPerMillionUsd: 10 },
    },
    {
      id: 'openai/gpt-4o-mini',
      provider: 'openrouter',
      name: 'OpenAI: GPT-4o mini',
      contextLength: 128000,
      pricing: { promptPerMillionUsd: 0.15, completionPerMillionUsd: 0.6 },
    },
    {
      id: 'meta-llama/llama-3.1-8b-instruct:free',
      provider: 'openrouter',
      name: 'Meta: Llama 3.1 8B Instruct (free)',
      contextLength: 131072,
      pricing: { promptPerMillionUsd: 0, completionPerMillionUsd: 0 },
    },
  ],
  sources: [
    { provider: 'simulated', configured: true, fetchedAt: null, count: 3, error: null },
    {
      provider: 'openrouter',
      configured: true,
      fetchedAt: '2026-01-01T10:00:00.000Z',
      count: 3,
      error: 'Could not fetch the OpenRouter model list: HTTP 500',
    },
    { provider: 'openai-compatible', configured: false, fetchedAt: null, count: 0, error: null },
  ],
  directives: [
    { syntax: ':fail[@kind]', effect: 'Every call fails.', example: 'sim/athena:fail@rank' },
    {
      syntax: ':delay<ms>[@kind]',
      effect: 'Answers after <ms> milliseconds.',
      example: 'sim/hermes:delay800@answer',
    },
    {
      syntax: ':stubborn / :fixed / :value<N>',
      effect: 'A Delphi panelist.',
      example: 'sim/apollo:stubborn',
    },
  ],
  promptKinds: ['answer', 'rank', 'synthesis'],
};

function Single({ onChange, initial = '' }: { onChange?: (id: string) => void; initial?: string }) {
  const [value, setValue] = useState(initial);
  return (
    <form onSubmit={(e) => e.preventDefault()}>
      <ModelPicker
        label="Chairman"
        name="chairmanModel"
        value={value}
        catalogue={catalogue}
        onChange={(id) => {
          setValue(id);
          onChange?.(id);
        }}
      />
      <output data-testid="value">{value}</output>
    </form>
  );
}

function Roster(props: Partial<RosterPickerProps> & { initial?: string[] }) {
  const [value, setValue] = useState<string[]>(props.initial ?? []);
  return (
    <>
      <ModelPicker
        multiple
        label="Council"
        name="councilModels"
        catalogue={catalogue}
        min={props.min}
        max={props.max}
        unique={props.unique}
        value={value}
        onChange={setValue}
      />
      <output data-testid="value">{value.join('|')}</output>
      <button type="button">elsewhere</button>
    </>
  );
}

const combobox = () => screen.getByRole('combobox') as HTMLInputElement;
const type = (text: string) => fireEvent.change(combobox(), { target: { value: text } });
const key = (k: string, init: Partial<KeyboardEventInit> = {}) =>
  fireEvent.keyDown(combobox(), { key: k, ...init });
const options = () => screen.queryAllByRole('option');
const value = () => screen.getByTestId('value').textContent;

beforeEach(() => resetModelCatalogue());

describe('ModelPicker for one model', () => {
  it('is a labelled combobox over a listbox grouped by provider, with context length and prices', () => {
    render(<Single />);
    const input = screen.getByRole('combobox', { name: 'Chairman' });
    expect(input.getAttribute('aria-autocomplete')).toBe('list');
    expect(input.getAttribute('aria-expanded')).toBe('false');
    expect(options()).toEqual([]);
    key('ArrowDown');
    expect(input.getAttribute('aria-expanded')).toBe('true');
    const listbox = screen.getByRole('listbox');
    expect(input.getAttribute('aria-controls')).toBe(listbox.id);
    const groups = within(listbox).getAllByRole('group');
    expect(
      groups.map(
        (g) =>
          g.getAttribute('aria-labelledby') &&
          document.getElementById(g.getAttribute('aria-labelledby')!)?.textContent,
      ),
    ).toEqual(['Simulated', 'OpenRouter']);
    expect(within(groups[1]).getAllByRole('option')).toHaveLength(3);
    const gpt = screen.getByRole('option', { name: /^openai\/gpt-4o OpenAI: GPT-4o ·/ });
    expect(gpt.textContent).toContain('128K context');
    expect(gpt.textContent).toContain('$2.50 in · $10.00 out per 1M tokens');
    expect(screen.getByRole('option', { name: /llama/ }).textContent).toContain('free');
  });

  it('filters as one types and picks with the arrow keys and Enter', () => {
    const changes: string[] = [];
    render(<Single onChange={(id) => changes.push(id)} />);
    type('gpt');
    expect(options().map((o) => o.querySelector('span')?.textContent)).toEqual([
      'openai/gpt-4o',
      'openai/gpt-4o-mini',
    ]);
    key('ArrowDown');
    key('ArrowDown');
    const input = combobox();
    const active = document.getElementById(input.getAttribute('aria-activedescendant')!)!;
    expect(active.getAttribute('aria-selected')).toBe('true');
    expect(active.textContent).toContain('openai/gpt-4o-mini');
    key('ArrowUp');
    key('Enter');
    expect(value()).toBe('openai/gpt-4o');
    expect(changes).toEqual(['gpt', 'openai/gpt-4o']);
    expect(input.getAttribute('aria-expanded')).toBe('false');
    expect(input.hasAttribute('aria-activedescendant')).toBe(false);
  });

  it('keeps free text, offers it as an option, and says when it is not a model id', () => {
    render(<Single />);
    type('local/my-model:q4');
    const typed = screen.getByRole('option', { name: /local\/my-model:q4/ });
    expect(typed.textContent).toContain('Use this id as typed');
    key('Escape');
    expect(combobox().getAttribute('aria-expanded')).toBe('false');
    expect(value()).toBe('local/my-model:q4');
    expect(combobox().hasAttribute('aria-invalid')).toBe(false);
    type('gpt4');
    expect(screen.getByRole('alert').textContent).toBe('"gpt4" is not a model id of the form provider/name');
    expect(combobox().getAttribute('aria-invalid')).toBe('true');
    expect(combobox().getAttribute('aria-describedby')).toContain(screen.getByRole('alert').id);
  });

  it('picks with the mouse, and keeps the focus in the field', () => {
    render(<Single />);
    combobox().focus();
    fireEvent.click(combobox());
    fireEvent.click(screen.getByRole('option', { name: /sim\/hermes/ }));
    expect(value()).toBe('sim/hermes');
    expect(document.activeElement).toBe(combobox());
  });

  it('explains the directives for sim/ ids only', () => {
    const { unmount } = render(<Single initial="openai/gpt-4o" />);
    expect(screen.queryByText('Simulated model directives')).toBeNull();
    unmount();
    render(<Single initial="sim/athena:delay800@answer" />);
    const help = screen.getByText('Simulated model directives').closest('details')!;
    expect(help.textContent).toContain(':delay<ms>[@kind]');
    expect(help.textContent).toContain('sim/hermes:delay800@answer');
    expect(help.textContent).toContain(':stubborn');
    expect(help.textContent).toContain('answer, rank, synthesis');
  });

  it("names a source that could not be fetched, in the source's own user-safe words", () => {
    render(<Single />);
    key('ArrowDown');
    expect(screen.getByText(/Could not fetch the OpenRouter model list: HTTP 500/)).toBeTruthy();
  });

  it('lets Enter submit the form when the list is closed', () => {
    const submitted = jest.fn((e: { preventDefault: () => void }) => e.preventDefault());
    render(
      <form onSubmit={submitted}>
        <ModelPicker label="Chairman" value="sim/a" onChange={() => undefined} catalogue={catalogue} />
        <button type="submit">go</button>
      </form>,
    );
    const event = new KeyboardEvent('keydown', { key: 'Enter', bubbles: true, cancelable: true });
    act(() => void combobox().dispatchEvent(event));
    expect(event.defaultPrevented).toBe(false);
    key('ArrowDown');
    const inList = new KeyboardEvent('keydown', { key: 'Enter', bubbles: true, cancelable: true });
    act(() => void combobox().dispatchEvent(inList));
    expect(inList.defaultPrevented).toBe(true);
  });
});

describe('ModelPicker for a roster', () => {
  it('adds typed ids on comma, space or Enter, and pasted lists whole', () => {
    render(<Roster />);
    type('sim/athena,');
    expect(value()).toBe('sim/athena');
    expect(combobox().value).toBe('');
    type('sim/hermes sim/apollo, openai/gpt-4o');
    expect(value()).toBe('sim/athena|sim/hermes|sim/apollo');
    expect(combobox().value).toBe('openai/gpt-4o');
    key('Enter');
    expect(value()).toBe('sim/athena|sim/hermes|sim/apollo|openai/gpt-4o');
    const chips = screen.getByRole('list', { name: 'Council: chosen models' });
    expect(within(chips).getAllByRole('listitem')).toHaveLength(4);
  });

  it('picks from the list with the keyboard, removes with Backspace and the Remove buttons', () => {
    render(<Roster initial={['sim/athena']} />);
    type('mini');
    key('ArrowDown');
    key('Enter');
    expect(value()).toBe('sim/athena|openai/gpt-4o-mini');
    fireEvent.click(screen.getByRole('button', { name: 'Remove sim/athena' }));
    expect(value()).toBe('openai/gpt-4o-mini');
    key('Backspace');
    expect(value()).toBe('');
  });

  it('refuses what is not an id, and more than max, keeping the text to fix', () => {
    render(<Roster max={2} />);
    type('gpt4 ');
    expect(value()).toBe('');
    expect(combobox().value).toBe('gpt4');
    expect(screen.getByRole('alert').textContent).toBe('"gpt4" is not a model id of the form provider/name');
    type('sim/a sim/b sim/c');
    key('Enter');
    expect(value()).toBe('sim/a|sim/b');
    expect(combobox().value).toBe('sim/c');
    expect(screen.getByRole('alert').textContent).toBe('At most 2 models');
    expect(screen.getByText(/0 to 2 models/)).toBeTruthy();
  });

  it('adds what was typed when the field is left, and shows the directives help for sim/ ids', () => {
    render(<Roster />);
    combobox().focus();
    type('sim/athena:fail@rank');
    fireEvent.blur(combobox());
    expect(value()).toBe('sim/athena:fail@rank');
    expect(screen.getByText('Simulated model directives')).toBeTruthy();
  });

  it('refuses a second copy when unique', () => {
    render(<Roster unique initial={['sim/athena']} />);
    type('sim/athena ');
    expect(value()).toBe('sim/athena');
    expect(screen.getByRole('alert').textContent).toBe('sim/athena is already in the list');
  });
});

describe('the list behind the pickers', () => {
  it('is fetched once for every picker on the page; free text still works when it fails', async () => {
    const fetchMock = jest.fn(async () => ({
      ok: true,
      status: 200,
      text: async () => JSON.stringify(catalogue),
    }));
    global.fetch = fetchMock as unknown as typeof fetch;
    await act(async () => {
      render(
        <>
          <ModelPicker label="A" value="" onChange={() => undefined} />
          <ModelPicker label="B" multiple value={[]} onChange={() => undefined} />
        </>,
      );
    });
    expect(fetchMock).toHaveBeenCalledTimes(1);
    expect(fetchMock.mock.calls[0]).toEqual(['/api/models', expect.objectContaining({ method: 'GET' })]);
    fireEvent.keyDown(screen.getByRole('combobox', { name: 'A' }), { key: 'ArrowDown' });
    expect(screen.getAllByRole('option').length).toBe(catalogue.models.length);
  });

  it('says so when it cannot be loaded, and asks again on the next mount', async () => {
    const fetchMock = jest.fn(async () => ({
      ok: false,
      status: 401,
      text: async () => JSON.stringify({ statusCode: 401, error: 'Unauthorized', message: 'no key' }),
    }));
    global.fetch = fetchMock as unknown as typeof fetch;
    let view!: ReturnType<typeof render>;
    await act(async () => {
      view = render(<ModelPicker label="A" value="" onChange={() => undefined} />);
    });
    expect(screen.getByText(/could not be loaded: type any provider\/name id/)).toBeTruthy();
    view.unmount();
    await act(async () => {
      render(<ModelPicker label="A" value="" onChange={() => undefined} />);
    });
    expect(fetchMock).toHaveBeenCalledTimes(2);
  });

  it('sets no fixed width that would overflow a 360 px screen', () => {
    const { container } = render(
      <Roster initial={['sim/athena', 'meta-llama/llama-3.1-8b-instruct:free']} />,
    );
    key('ArrowDown');
    for (const element of Array.from(container.querySelectorAll<HTMLElement>('*'))) {
      for (const property of ['width', 'minWidth'] as const) {
        const size = element.style[property];
        if (size.endsWith('px')) expect(parseFloat(size)).toBeLessThanOrEqual(360);
      }
    }
    expect(combobox().style.minWidth).toBe('0');
  });

  it('formats context lengths and prices', () => {
    expect(formatContext(128000)).toBe('128K');
    expect(formatContext(2_000_000)).toBe('2M');
    expect(formatContext(1_048_576)).toBe('1.05M');
    expect(formatContext(512)).toBe('512');
    expect(formatPricing({ promptPerMillionUsd: 0.075, completionPerMillionUsd: 0.3 })).toBe(
      '$0.075 in · $0.3 out per 1M tokens',
    );
    expect(formatPricing({ promptPerMillionUsd: 150, completionPerMillionUsd: 600 })).toBe(
      '$150 in · $600 out per 1M tokens',
    );
  });
});
