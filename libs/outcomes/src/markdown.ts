/*
 * Markdown that text written by a model (or a user) cannot restructure: short values are escaped
 * onto one inert line, long texts go into a fenced block no line of theirs can close.
 */

// eslint-disable-next-line no-control-regex -- control characters are what it removes
const CONTROL = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f\u200b-\u200f\u202a-\u202e\u2066-\u2069]/g;

/**
 * Text as one line of inert Markdown, safe inside a table cell: line breaks become spaces, control
 * and bidi/zero-width characters go, every character Markdown or HTML could act on is escaped, and
 * nothing autolinks. The one escape for model and user text in Markdown (transcripts, batch reports).
 */
export function escapeMarkdown(value: string): string {
  return (
    value
      .replace(/\r\n|[\r\n\u2028\u2029\u0085]/g, ' ')
      .replace(CONTROL, '')
      .replace(/[\\`*_{}[\]()<>#+!|~&$]/g, (c) => `\\${c}`)
      // no autolinks either (GFM links bare `https://…` and `www.…`)
      .replace(/:\/\//g, '\\://')
      .replace(/\bwww\./gi, (w) => `${w.slice(0, 3)}\\.`)
  );
}

/** escapeMarkdown, with a dash for nothing. */
export function inline(value: string | null | undefined): string {
  if (value === null || value === undefined || value === '') return '—';
  return escapeMarkdown(value);
}

/**
 * A fenced code block holding `text` verbatim (control characters removed): the fence is longer
 * than any run of backticks in the text, so no line of it can close the block, and nothing in it
 * renders as a link, an image or HTML.
 */
export function fenced(text: string, info = 'text'): string {
  const body = text.replace(/\r\n?/g, '\n').replace(CONTROL, '');
  const longest = Math.max(0, ...[...body.matchAll(/`+/g)].map((m) => m[0].length));
  const fence = '`'.repeat(Math.max(3, longest + 1));
  return body === '' ? `${fence}${info}\n${fence}` : `${fence}${info}\n${body}\n${fence}`;
}

/** A Markdown table of cells already escaped, and a blank line after it; `_None._` for no rows. */
export function table(header: string[], rows: string[][]): string[] {
  if (rows.length === 0) return ['_None._', ''];
  return [
    `| ${header.join(' | ')} |`,
    `| ${header.map(() => '---').join(' | ')} |`,
    ...rows.map((row) => `| ${row.join(' | ')} |`),
    '',
  ];
}

/** A figure for people: whole numbers as they are, others to two decimals; null as a dash. */
export function figure(value: number | null | undefined): string {
  if (value === null || value === undefined || !Number.isFinite(value)) return '—';
  if (Number.isInteger(value)) return String(value);
  return (Math.round(value * 100) / 100).toString();
}

export const usd = (value: number): string => `$${value.toFixed(4)}`;
