/** A mistake in how the CLI was called: the usage text follows, exit code 2. */
export class UsageError extends Error {}

/** Something that went wrong while doing what was asked: exit code 1. */
export class CliError extends Error {
  constructor(
    message: string,
    readonly fields?: Record<string, string>,
    /** The HTTP status the API answered with, when the error is its answer. */
    readonly status?: number,
  ) {
    super(message);
  }
}

/** A batch of 10 000 bad items names 10 000 fields: show the first ones. */
const MAX_FIELDS_SHOWN = 20;

export function formatError(error: CliError): string {
  const lines = [`error: ${error.message}`];
  const fields = Object.entries(error.fields ?? {});
  for (const [field, problem] of fields.slice(0, MAX_FIELDS_SHOWN)) lines.push(`  ${field}: ${problem}`);
  if (fields.length > MAX_FIELDS_SHOWN) lines.push(`  … and ${fields.length - MAX_FIELDS_SHOWN} more`);
  return lines.join('\n');
}

export const unreachable = (url: string): CliError =>
  new CliError(`cannot reach Conclave at ${url} (is it running?)`);

export const keyRefused = (key: string | undefined): CliError =>
  new CliError(
    key
      ? 'the API key was refused: give a valid key with --key or CONCLAVE_API_KEY'
      : 'this Conclave needs an API key: give one with --key or CONCLAVE_API_KEY',
  );
