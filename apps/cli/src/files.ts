import { readFile } from 'node:fs/promises';
import { CliError } from './errors';

const REASONS: Record<string, string> = {
  ENOENT: 'no such file',
  EACCES: 'permission denied',
  EISDIR: 'it is a directory',
};

/** A file's text, or a `CliError` saying why it cannot be read. */
export async function readText(file: string): Promise<string> {
  try {
    return await readFile(file, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? '';
    throw new CliError(`cannot read ${file}: ${REASONS[code] ?? (error as Error).message}`);
  }
}
