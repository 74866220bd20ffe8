import { createWriteStream } from 'node:fs';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import type { BatchAccepted, BatchView } from '@conclave/contracts';
import { ApiClient, type SendOptions } from './api';
import { jsonObjectFlag, modeFlag, wholeNumberFlag, type Flags, type Target } from './args';
import { describeBatch, batchRow, ProgressReporter } from './batch-view';
import { CliError, UsageError } from './errors';
import { readText } from './files';
import { call, deferred, openLive } from './live';

type Upload = Required<Pick<SendOptions, 'body' | 'contentType'>> & Pick<SendOptions, 'query'>;

const UPLOAD_TYPES: Record<string, string> = {
  '.csv': 'text/csv',
  '.jsonl': 'application/x-ndjson',
  '.ndjson': 'application/x-ndjson',
};

interface SubmitSettings {
  mode?: string;
  defaults?: Record<string, unknown>;
  name?: string;
  concurrency?: number;
  titles: boolean;
}

function settingsOf(flags: Flags): SubmitSettings {
  return {
    mode: modeFlag(flags.mode),
    defaults: jsonObjectFlag('defaults', flags.defaults),
    name: flags.name,
    concurrency: wholeNumberFlag('concurrency', flags.concurrency),
    titles: flags.titles === true,
  };
}

/** A `.json` file is a whole envelope `{ name?, defaults?, items, … }`; the flags override it. */
function envelopeUpload(file: string, text: string, settings: SubmitSettings): Upload {
  let envelope: unknown;
  try {
    envelope = JSON.parse(text.replace(/^\uFEFF/, ''));
  } catch {
    throw new CliError(`${file} is not valid JSON`);
  }
  if (typeof envelope !== 'object' || envelope === null || Array.isArray(envelope))
    throw new CliError(`${file} must hold a JSON object: { "items": [ … ], "defaults": { … }, … }`);
  const body: Record<string, unknown> = { ...envelope };
  if (settings.name !== undefined) body.name = settings.name;
  if (settings.concurrency !== undefined) body.concurrency = settings.concurrency;
  if (settings.titles) body.generateTitles = true;
  if (settings.defaults || settings.mode) {
    const own = typeof body.defaults === 'object' && body.defaults !== null ? body.defaults : {};
    body.defaults = { ...own, ...settings.defaults, ...(settings.mode ? { mode: settings.mode } : {}) };
  }
  return { body: JSON.stringify(body), contentType: 'application/json' };
}

export function uploadFor(file: string, text: string, settings: SubmitSettings): Upload {
  const extension = path.extname(file).toLowerCase();
  if (extension === '.json') return envelopeUpload(file, text, settings);
  const contentType = UPLOAD_TYPES[extension];
  if (!contentType) throw new UsageError(`${file}: give a .csv, .jsonl, .ndjson or .json file`);
  return {
    body: text,
    contentType,
    query: {
      name: settings.name,
      concurrency: settings.concurrency?.toString(),
      generateTitles: settings.titles ? 'true' : undefined,
      defaults: settings.defaults ? JSON.stringify(settings.defaults) : undefined,
      mode: settings.mode,
    },
  };
}

/** Follows a batch over Socket.IO until `batch_complete`, drawing its progress on stderr. */
async function watch(target: Target, batchId: string): Promise<BatchView> {
  const finished = deferred<BatchView>();
  const reporter = new ProgressReporter(process.stderr);
  let resubscribe = (): void => undefined;
  const socket = await openLive(target, { onReconnect: () => resubscribe(), onLost: finished.reject });
  const stop = () => {
    reporter.interrupt();
    process.stderr.write(`stopped watching; the batch goes on (conclave batch status ${batchId})\n`);
    process.exit(130);
  };
  process.once('SIGINT', stop);
  try {
    const mine = (view: BatchView) => view?.batchId === batchId;
    socket.on('batch_progress', (view: BatchView) => mine(view) && reporter.update(view));
    socket.on('batch_complete', (view: BatchView) => mine(view) && finished.resolve(view));
    const subscribe = () => call(socket, 'subscribe', { batchId }).catch(finished.reject);
    resubscribe = () => void subscribe();
    await subscribe();
    const view = await finished.promise;
    reporter.finish(view);
    return view;
  } finally {
    process.off('SIGINT', stop);
    socket.close();
  }
}

const batchPath = (id: string, rest = ''): string => `/batches/${encodeURIComponent(id)}${rest}`;

async function submit(target: Target, [file]: string[], flags: Flags): Promise<number> {
  const settings = settingsOf(flags);
  const upload = uploadFor(file, await readText(file), settings);
  const accepted = await new ApiClient(target).json<BatchAccepted>('POST', '/batches', upload);
  process.stdout.write(`${accepted.batchId}\n`);
  process.stderr.write(`accepted ${accepted.total} items\n`);
  if (flags.watch) await watch(target, accepted.batchId);
  return 0;
}

async function status(target: Target, [id]: string[], flags: Flags): Promise<number> {
  const view = await new ApiClient(target).json<BatchView>('GET', batchPath(id));
  process.stdout.write(`${flags.json ? JSON.stringify(view, null, 2) : describeBatch(view)}\n`);
  return 0;
}

async function list(target: Target, _args: string[], flags: Flags): Promise<number> {
  const views = await new ApiClient(target).json<BatchView[]>('GET', '/batches');
  if (flags.json) process.stdout.write(`${JSON.stringify(views, null, 2)}\n`);
  else if (views.length === 0) process.stderr.write('no batches yet\n');
  else process.stdout.write(views.map((view) => `${batchRow(view)}\n`).join(''));
  return 0;
}

async function results(target: Target, [id]: string[], flags: Flags): Promise<number> {
  const format = flags.format ?? 'jsonl';
  if (format !== 'jsonl' && format !== 'csv') throw new UsageError('--format must be jsonl or csv');
  const query = flags.long ? { format, shape: 'long' } : { format };
  const response = await new ApiClient(target).send('GET', batchPath(id, '/results'), { query });
  if (!response.body) throw new CliError('the server sent no results');
  const source = Readable.fromWeb(response.body as WebReadableStream<Uint8Array>);
  if (flags.out === undefined) {
    await pipeline(source, process.stdout, { end: false });
    return 0;
  }
  await pipeline(source, createWriteStream(flags.out));
  process.stderr.write(`wrote ${flags.out}\n`);
  return 0;
}

async function cancel(target: Target, [id]: string[], flags: Flags): Promise<number> {
  const view = await new ApiClient(target).json<BatchView>('POST', batchPath(id, '/cancel'));
  process.stdout.write(`${flags.json ? JSON.stringify(view, null, 2) : describeBatch(view)}\n`);
  return 0;
}

/** `DELETE /api/batches/:id`: refused (409, with the server's reason) while the batch still runs. */
async function remove(target: Target, [id]: string[]): Promise<number> {
  await new ApiClient(target).send('DELETE', batchPath(id));
  process.stdout.write(`deleted batch ${id}: its items, their deliberations and events\n`);
  return 0;
}

export const batchCommands = { submit, status, list, results, cancel, remove } as const;
