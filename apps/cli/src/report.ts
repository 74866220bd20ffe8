import { writeFile } from 'node:fs/promises';
import { ApiClient } from './api';
import type { Flags, Target } from './args';
import { UsageError } from './errors';

/** `--format` of a report or comparison: Markdown for people (the default) or the JSON the API gives. */
function formatOf(flags: Flags): 'md' | 'json' {
  const format = flags.format ?? 'md';
  if (format !== 'md' && format !== 'json') throw new UsageError('--format must be md or json');
  return format;
}

async function fetchText(target: Target, path: string, query: Record<string, string>, format: 'md' | 'json') {
  const response = await new ApiClient(target).send('GET', path, { query: { ...query, format } });
  const text = await response.text();
  // JSON is re-indented for reading; Markdown is written as the server made it.
  return format === 'json' ? `${JSON.stringify(JSON.parse(text), null, 2)}\n` : text;
}

async function output(text: string, flags: Flags): Promise<number> {
  if (flags.out === undefined) process.stdout.write(text);
  else {
    await writeFile(flags.out, text);
    process.stderr.write(`wrote ${flags.out}\n`);
  }
  return 0;
}

/** `conclave batch report ID [--format md|json] [--out FILE]` */
async function report(target: Target, [id]: string[], flags: Flags): Promise<number> {
  const format = formatOf(flags);
  return output(await fetchText(target, `/batches/${encodeURIComponent(id)}/report`, {}, format), flags);
}

/** `conclave batch compare A B [--format md|json] [--out FILE]`: B against A. */
async function compare(target: Target, [a, b]: string[], flags: Flags): Promise<number> {
  const format = formatOf(flags);
  return output(await fetchText(target, '/batches/compare', { a, b }, format), flags);
}

export const reportCommands = { report, compare } as const;
