import { parseInvocation, USAGE, type CommandName, type Flags, type Target } from './args';
import { askCommand } from './ask';
import { batchCommands } from './batch';
import { CliError, formatError, UsageError } from './errors';
import { reportCommands } from './report';

type Command = (target: Target, args: string[], flags: Flags) => Promise<number>;

const COMMANDS: Record<CommandName, Command> = {
  ask: askCommand,
  'batch submit': batchCommands.submit,
  'batch status': batchCommands.status,
  'batch list': batchCommands.list,
  'batch results': batchCommands.results,
  'batch cancel': batchCommands.cancel,
  'batch delete': batchCommands.remove,
  'batch report': reportCommands.report,
  'batch compare': reportCommands.compare,
  // Loaded when used: the MCP SDK is not needed by the other commands.
  mcp: async (target) => (await import('./mcp')).mcpCommand(target),
};

/** A reader that went away (`conclave batch results … | head`) is not an error. */
const isBrokenPipe = (error: unknown): boolean => (error as NodeJS.ErrnoException)?.code === 'EPIPE';

function report(error: unknown): number {
  if (error instanceof UsageError) {
    process.stderr.write(`conclave: ${error.message}\n\n${USAGE}`);
    return 2;
  }
  if (isBrokenPipe(error)) return 0;
  const cliError =
    error instanceof CliError ? error : new CliError((error as Error)?.message ?? String(error));
  process.stderr.write(`${formatError(cliError)}\n`);
  return 1;
}

/** Runs one command line; resolves to the exit code (0 done, 1 failed, 2 misused). */
export async function run(argv: string[], env: NodeJS.ProcessEnv = process.env): Promise<number> {
  try {
    const invocation = parseInvocation(argv, env);
    if (invocation.command === 'help') {
      process.stdout.write(USAGE);
      return 0;
    }
    return await COMMANDS[invocation.command](invocation.target, invocation.args, invocation.flags);
  } catch (error) {
    return report(error);
  }
}
