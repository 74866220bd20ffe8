/**
 * CSV as RFC 4180 writes it, read and written without a library (issue 37: datasets people
 * already have). Reading accepts what spreadsheets export: a leading byte-order mark, CRLF or LF
 * line ends (a lone CR too), quoted fields holding separators, quotes (doubled) and line breaks,
 * and a last record with or without a line end. Cells are data: nothing is evaluated, a cell
 * that looks like a formula (`=1+1`) is read as those characters.
 */

/** A malformed CSV: where (1-based line of the text, 1-based record) and what. */
export class CsvSyntaxError extends Error {
  constructor(
    readonly line: number,
    readonly record: number,
    readonly detail: string,
  ) {
    super(`CSV line ${line} (record ${record}): ${detail}`);
    this.name = 'CsvSyntaxError';
  }
}

/** One record: its cells and the line of the text it starts on (1-based). */
export interface CsvRecord {
  line: number;
  cells: string[];
}

/**
 * The records of a CSV text, in order. A blank line between records is skipped (not a record of
 * one empty cell). Throws CsvSyntaxError for a quote inside an unquoted cell, text after a closing
 * quote, or a quote left open at the end.
 */
export function parseCsv(text: string, separator = ','): CsvRecord[] {
  const input = text.startsWith('\uFEFF') ? text.slice(1) : text;
  const records: CsvRecord[] = [];
  let line = 1;
  let i = 0;
  const n = input.length;
  while (i < n) {
    const start = line;
    const cells: string[] = [];
    // A blank line (LF, CRLF or CR alone) is no record.
    if (input[i] === '\n' || input[i] === '\r') {
      i += input[i] === '\r' && input[i + 1] === '\n' ? 2 : 1;
      line += 1;
      continue;
    }
    for (;;) {
      let cell = '';
      if (input[i] === '"') {
        const opened = line;
        i += 1;
        for (;;) {
          if (i >= n) {
            throw new CsvSyntaxError(opened, records.length + 1, 'a quoted cell is never closed');
          }
          const c = input[i];
          if (c === '"') {
            if (input[i + 1] === '"') {
              cell += '"';
              i += 2;
              continue;
            }
            i += 1;
            break;
          }
          if (c === '\n' || (c === '\r' && input[i + 1] !== '\n')) line += 1;
          cell += c;
          i += 1;
        }
        if (i < n && input[i] !== separator && input[i] !== '\n' && input[i] !== '\r') {
          throw new CsvSyntaxError(
            line,
            records.length + 1,
            `text after a quoted cell's closing quote (cell ${cells.length + 1}); a quote inside a quoted cell is written twice ("")`,
          );
        }
      } else {
        while (i < n && input[i] !== separator && input[i] !== '\n' && input[i] !== '\r') {
          if (input[i] === '"') {
            throw new CsvSyntaxError(
              line,
              records.length + 1,
              `a quote inside an unquoted cell (cell ${cells.length + 1}); quote the whole cell and write the quote twice ("")`,
            );
          }
          cell += input[i];
          i += 1;
        }
      }
      cells.push(cell);
      if (i < n && input[i] === separator) {
        i += 1;
        continue;
      }
      // End of the record: a line end (consumed) or the end of the text.
      if (i < n) {
        i += input[i] === '\r' && input[i + 1] === '\n' ? 2 : 1;
        line += 1;
      }
      break;
    }
    records.push({ line: start, cells });
  }
  return records;
}

/**
 * A cell a spreadsheet would read as a formula (OWASP, "CSV Injection"): one that starts with
 * `=`, `+`, `-`, `@`, a tab or a carriage return, also after leading white space (some
 * spreadsheets trim it on import) and in the full-width forms some locales accept.
 */
const FORMULA_START = /^(?:[\t\r]|\s*[=+\-@\uFF1D\uFF0B\uFF0D\uFF20])/;

/** Text a spreadsheet shows as text: a formula-like cell gets a leading `'` (and is quoted). */
export function neutraliseCell(value: string): string {
  return FORMULA_START.test(value) ? `'${value}` : value;
}

/** A cell as RFC 4180 writes it: quoted when it holds a separator, a quote or a line break. */
export function csvCell(value: string | number): string {
  const text = String(value);
  return /[",\r\n]/.test(text) || text !== text.trim() ? `"${text.replaceAll('"', '""')}"` : text;
}

/**
 * A CSV text (CRLF line ends, as RFC 4180 says): numbers are written bare (a spreadsheet reads
 * -2 as the number), every text cell is neutralised (neutraliseCell) and quoted when it must be.
 */
export function writeCsv(header: readonly string[], rows: readonly (readonly (string | number)[])[]): string {
  const record = (cells: readonly (string | number)[]) =>
    cells.map((cell) => csvCell(typeof cell === 'number' ? cell : neutraliseCell(cell))).join(',');
  return [record(header), ...rows.map(record)].map((r) => `${r}\r\n`).join('');
}
