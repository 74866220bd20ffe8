import { parseArgs } from 'node:util';
import { MODE_NAMES, type ModeName } from '@conclave/contracts';
import { UsageError } from './errors';

export const USAGE = `Usage: conclave [--url URL] [--key KEY] <command> [options]

Commands:
  ask QUESTION          start a deliberation, follow it live, print the answer
  batch submit FILE     submit a batch: .csv, .jsonl / .ndjson, or a .json envelope; prints its id
  batch status ID       a batch's progress, counts, usage and ETA
  batch list            your batches, newest first
  batch results ID      one result line per item, streamed
  batch cancel ID       cancel a batch: queued items stop, running ones finish
  batch delete ID       delete a finished batch: its items, their deliberations and events
  batch report ID       a batch's report: per-mode statistics, agreement, usage, failures
  batch compare A B     compare two batches of the same mode on the same items (B − A)
  mcp                   an MCP server on stdin/stdout for desktop clients (Claude Desktop, Cursor, …)

Global options:
  --url URL             Conclave's address (env CONCLAVE_URL, default http://localhost:3000)
  --key KEY             API key (env CONCLAVE_API_KEY)
  -h, --help            show this help

ask:
  --mode MODE           ${MODE_NAMES.join(', ')} (default council)
  --models A,B,C        the panel: council members, voters, debaters, jurors or panelists
  --chairman MODEL      council or vote chairman, jury foreman, Delphi facilitator
  --content TEXT        jury: the content to evaluate (or --content-file FILE)
  --original-question TEXT
                        jury: the question the content answers
  --config JSON         more modeConfig fields, e.g. '{"timeoutMs":60000}'
  --conversation ID     a follow-up in that conversation (council): it keeps the conversation's
                        mode, panel and options, except what --models, --chairman or --config name
  --expected ANSWER     grade the answers against this expected answer (issue 37): after the
                        answer, the panel's final verdict and every answer marked ✓ / ✗ / ?
  --grader TYPE|JSON    how to grade: exact, normalized (the default), choice, numeric, contains,
                        regex, or a JSON object, e.g. '{"type":"numeric","absoluteTolerance":0.5}'
  --json                print the whole stored result as JSON
  -q, --quiet           progress lines only, not the models' answers as they come
  While it runs, stderr shows each step and each model's answer: on a terminal as it is
  written (one call at a time; the others' answers follow whole), otherwise each answer
  whole in plain lines as it lands. Answers cut at the model's length limit are marked.
  stdout gets only the result: the mode's answer, or --json.
  Ctrl-C asks "Cancel the deliberation on the server? [y/N]": y cancels it, anything else
  leaves it running and quits. When stdin or stderr is not a terminal, Ctrl-C cancels it
  without asking. A second Ctrl-C quits at once, leaving the deliberation running.

batch submit:
  --mode MODE           mode of every item (unless an item names its own)
  --defaults JSON       fields applied under every item, e.g. '{"modeConfig":{"jurorModels":[…]}}'
  --name NAME  --concurrency N  --titles (generate conversation titles)
  --watch               follow the batch with a progress bar until it finishes

batch status | list | cancel:  --json   print the raw JSON
batch results:  --format jsonl|csv (default jsonl)  --out FILE (default stdout)
                --long   the long format: a row per attempt, model call and judgement
batch report | compare:  --format md|json (default md)  --out FILE (default stdout)

mcp:
  Speaks the Model Context Protocol on stdin/stdout (its own lines go to stderr); its tools and
  resources are those of the gateway's /mcp at --url, called with --key. Progress and
  cancellation pass through. It exits with 1 and says why on stderr when the gateway cannot be
  reached or refuses the key; with 0 when the client closes its stdin.

Exit codes: 0 done, 1 failed, 2 misused, 3 the deliberation was cancelled,
130 stopped by Ctrl-C (what it followed goes on on the server).
`;

const OPTIONS = {
  url: { type: 'string' },
  key: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
  mode: { type: 'string' },
  models: { type: 'string' },
  chairman: { type: 'string' },
  content: { type: 'string' },
  'content-file': { type: 'string' },
  'original-question': { type: 'string' },
  config: { type: 'string' },
  conversation: { type: 'string' },
  expected: { type: 'string' },
  grader: { type: 'string' },
  json: { type: 'boolean' },
  quiet: { type: 'boolean', short: 'q' },
  defaults: { type: 'string' },
  name: { type: 'string' },
  concurrency: { type: 'string' },
  titles: { type: 'boolean' },
  watch: { type: 'boolean' },
  format: { type: 'string' },
  out: { type: 'string' },
  long: { type: 'boolean' },
} as const;

export type CommandName =
  | 'ask'
  | 'batch submit'
  | 'batch status'
  | 'batch list'
  | 'batch results'
  | 'batch cancel'
  | 'batch delete'
  | 'batch report'
  | 'batch compare'
  | 'mcp';

type OptionName = keyof typeof OPTIONS;

interface CommandShape {
  options: readonly OptionName[];
  /** How many positionals it takes: exactly this many, or at least one when 'some'. */
  positionals: number | 'some';
  synopsis: string;
}

const COMMANDS: Record<CommandName, CommandShape> = {
  ask: {
    options: [
      'mode',
      'models',
      'chairman',
      'content',
      'content-file',
      'original-question',
      'config',
      'conversation',
      'expected',
      'grader',
      'json',
      'quiet',
    ],
    positionals: 'some',
    synopsis: 'ask QUESTION [options]',
  },
  'batch submit': {
    options: ['mode', 'defaults', 'name', 'concurrency', 'titles', 'watch'],
    positionals: 1,
    synopsis: 'batch submit FILE [options]',
  },
  'batch status': { options: ['json'], positionals: 1, synopsis: 'batch status ID [--json]' },
  'batch list': { options: ['json'], positionals: 0, synopsis: 'batch list [--json]' },
  'batch results': {
    options: ['format', 'out', 'long'],
    positionals: 1,
    synopsis: 'batch results ID [--format jsonl|csv] [--long] [--out FILE]',
  },
  'batch cancel': { options: ['json'], positionals: 1, synopsis: 'batch cancel ID [--json]' },
  'batch delete': { options: [], positionals: 1, synopsis: 'batch delete ID' },
  'batch report': {
    options: ['format', 'out'],
    positionals: 1,
    synopsis: 'batch report ID [--format md|json] [--out FILE]',
  },
  'batch compare': {
    options: ['format', 'out'],
    positionals: 2,
    synopsis: 'batch compare A B [--format md|json] [--out FILE]',
  },
  mcp: { options: [], positionals: 0, synopsis: 'mcp' },
};

const GLOBAL_OPTIONS: readonly OptionName[] = ['url', 'key', 'help'];

const parseAll = (argv: string[]) =>
  parseArgs({ args: argv, options: OPTIONS, allowPositionals: true, strict: true });

export type Flags = ReturnType<typeof parseAll>['values'];

export interface Target {
  /** Without a trailing slash. */
  url: string;
  key: string | undefined;
}

export type Invocation =
  { command: 'help' } | { command: CommandName; args: string[]; flags: Flags; target: Target };

function parse(argv: string[]): ReturnType<typeof parseAll> {
  try {
    return parseAll(argv);
  } catch (error) {
    const message = (error as Error).message;
    const option = /'(-[^']*)'/.exec(message)?.[1];
    const code = (error as { code?: string }).code;
    if (code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION' && option) throw new UsageError(`unknown option ${option}`);
    throw new UsageError(message.split('. ')[0]);
  }
}

function commandOf(positionals: string[]): { command: CommandName; args: string[] } {
  const [first, second] = positionals;
  if (first === undefined) throw new UsageError('missing command');
  if (first === 'ask') return { command: 'ask', args: positionals.slice(1) };
  if (first === 'mcp') return { command: 'mcp', args: positionals.slice(1) };
  if (first === 'batch') {
    const command = `batch ${second ?? ''}`;
    if (second === undefined) throw new UsageError('missing batch command');
    if (!(command in COMMANDS)) throw new UsageError(`unknown command "${command}"`);
    return { command: command as CommandName, args: positionals.slice(2) };
  }
  throw new UsageError(`unknown command "${first}"`);
}

function checkShape(command: CommandName, args: string[], flags: Flags): void {
  const shape = COMMANDS[command];
  for (const name of Object.keys(flags) as OptionName[]) {
    if (!GLOBAL_OPTIONS.includes(name) && !shape.options.includes(name))
      throw new UsageError(`${command} takes no --${name}`);
  }
  if (shape.positionals === 'some' ? args.length === 0 : args.length !== shape.positionals)
    throw new UsageError(`usage: conclave ${shape.synopsis}`);
}

function targetOf(flags: Flags, env: NodeJS.ProcessEnv): Target {
  const url = (flags.url ?? env.CONCLAVE_URL ?? 'http://localhost:3000').replace(/\/+$/, '');
  if (!URL.canParse(url) || !/^https?:$/.test(new URL(url).protocol))
    throw new UsageError(`--url must be an http(s) address, got "${url}"`);
  return { url, key: (flags.key ?? env.CONCLAVE_API_KEY) || undefined };
}

export function parseInvocation(argv: string[], env: NodeJS.ProcessEnv): Invocation {
  const { values, positionals } = parse(argv);
  if (values.help || positionals[0] === 'help') return { command: 'help' };
  const { command, args } = commandOf(positionals);
  checkShape(command, args, values);
  return { command, args, flags: values, target: targetOf(values, env) };
}

export function modeFlag(value: string | undefined): ModeName | undefined {
  if (value === undefined) return undefined;
  if (!(MODE_NAMES as readonly string[]).includes(value))
    throw new UsageError(`--mode must be one of ${MODE_NAMES.join(', ')}, got "${value}"`);
  return value as ModeName;
}

export function jsonObjectFlag(flag: string, text: string | undefined): Record<string, unknown> | undefined {
  if (text === undefined) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new UsageError(`--${flag} is not valid JSON`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw new UsageError(`--${flag} must be a JSON object`);
  return value as Record<string, unknown>;
}

export function listFlag(flag: string, text: string | undefined): string[] | undefined {
  if (text === undefined) return undefined;
  const list = text
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  if (list.length === 0) throw new UsageError(`--${flag} needs at least one model`);
  return list;
}

export function wholeNumberFlag(flag: string, text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  if (!/^\d+$/.test(text)) throw new UsageError(`--${flag} must be a whole number, got "${text}"`);
  return Number(text);
}
