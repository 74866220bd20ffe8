/** The word after `flag` in a command's arguments: undefined without the flag, or with nothing after it. */
export function flagValue(args: readonly string[], flag: string): string | undefined {
  const i = args.indexOf(flag);
  return i >= 0 ? args[i + 1] : undefined;
}
