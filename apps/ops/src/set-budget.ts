import { loadConfig } from '@conclave/config';
import { BudgetsRepository } from '@conclave/persistence';
import { flagValue } from './args';
import { withDatabase } from './database';

const USAGE =
  'usage: npm run user:budget -- --user <name> --usd <monthly budget, e.g. 20>   (or --none to remove it; without either, show it)';

/** Parses `--usd`: a finite number of dollars, zero or more. */
export function parseBudget(value: string | undefined): number | null | 'invalid' {
  if (value === undefined) return 'invalid';
  if (!/^\d+(\.\d+)?$/.test(value.trim())) return 'invalid';
  const usd = Number(value);
  return Number.isFinite(usd) && usd <= 1e9 ? usd : 'invalid';
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const user = flagValue(args, '--user');
  const none = args.includes('--none');
  const usd = args.includes('--usd') ? parseBudget(flagValue(args, '--usd')) : null;
  if (!user || usd === 'invalid' || (none && usd !== null)) {
    console.error(USAGE);
    process.exit(2);
  }
  await withDatabase(loadConfig().databaseUrl, 1, async (dataSource) => {
    const budgets = new BudgetsRepository(dataSource);
    const found =
      usd !== null || none
        ? await budgets.setMonthlyBudget(user, none ? null : usd)
        : await budgets.byName(user);
    if (!found) {
      console.error(`no user named ${user}`);
      process.exitCode = 1;
      return;
    }
    const spent = await budgets.spentThisMonth(found.userId);
    const budget =
      found.monthlyBudgetUsd === null ? 'no monthly budget' : `monthly budget $${found.monthlyBudgetUsd}`;
    console.log(`user ${found.name}: ${budget}; spent this month (UTC) $${spent.toFixed(4)}`);
  });
}

if (require.main === module) {
  main().catch((error: unknown) => {
    console.error(`could not set the budget: ${error instanceof Error ? error.message : String(error)}`);
    process.exit(1);
  });
}
