import { isModelId, type ModelEntry, type SimDirectiveHelp } from '@conclave/contracts';

/**
 * The simulated side of GET /api/models: the simulated names the product documents (README,
 * default rosters) and what may follow them. Any `sim/<name>` works; these are suggestions.
 * The directives mirror directives.ts (faults and delays) and the flags the modes' simulated
 * responders read (libs/deliberation/src/modes/*.sim.ts), as the README's table documents them.
 */
const PERSONAS: readonly { name: string; role: string }[] = [
  { name: 'athena', role: 'a panelist (default council roster)' },
  { name: 'hermes', role: 'a panelist (default council roster)' },
  { name: 'apollo', role: 'a panelist (default council roster)' },
  { name: 'chairman', role: 'a chairman, foreman or facilitator' },
  { name: 'foreman', role: 'a jury foreman' },
];

const SIMULATED_DESCRIPTION =
  'Built-in simulated model: deterministic answers in every prompt format, no provider needed. ' +
  'Add directives (e.g. :fail, :delay800@answer) to make it misbehave.';

export const SIM_DIRECTIVES: readonly SimDirectiveHelp[] = [
  {
    syntax: ':fail[@kind]',
    effect: 'Every call (or only calls of that prompt kind) fails with a provider error; not retried.',
    example: 'sim/athena:fail@rank',
  },
  {
    syntax: ':timeout[@kind]',
    effect: "Never answers; the mode's timeoutMs ends the call.",
    example: 'sim/hermes:timeout',
  },
  {
    syntax: ':malformed[@kind]',
    effect: 'Answers without the format the prompt requires.',
    example: 'sim/apollo:malformed@rank',
  },
  {
    syntax: ':transient[@kind]',
    effect: 'The first attempt fails with HTTP 503; the retry succeeds.',
    example: 'sim/athena:transient',
  },
  {
    syntax: ':delay<ms>[@kind]',
    effect: 'Answers after <ms> milliseconds instead of the configured simulated latency.',
    example: 'sim/hermes:delay800@answer',
  },
  {
    syntax: ':heavy[<ms>][@kind]',
    effect:
      'A heavy-tailed latency: lognormal with median <ms> (default: the configured simulated latency) and σ = 1 (p95 ≈ 5× the median), drawn per call from SIM_SEED, the model id and the prompt.',
    example: 'sim/hermes:heavy1000',
  },
  {
    syntax: ':rank2 / :rank3 / :rank4',
    effect: 'Council rankings only that parseRanking fallback level can read.',
    example: 'sim/apollo:rank3',
  },
  {
    syntax: ':good / :fair / :poor',
    effect: 'A juror whose scores lead to APPROVE / REVISE / REJECT.',
    example: 'sim/j1:good',
  },
  {
    syntax: ':inline / :nopipes / :decimal / :outofrange',
    effect: 'A juror writing its scores inline, in a table without outer pipes, as x.5, or out of range.',
    example: 'sim/j2:nopipes',
  },
  {
    syntax: ':noscores / :noverdict / :echo',
    effect:
      "A juror giving no scores, no verdict, or quoting the content's own verdict and score lines first.",
    example: 'sim/j3:noverdict',
  },
  {
    syntax: ':revise / :stand / :merge (:markdown, :nodecision, :nomarker)',
    effect: "A debater's decision in the revision round; the others vary its format.",
    example: 'sim/athena:stand',
  },
  {
    syntax: ':voteA … :voteF / :self / :novote / :badlabel',
    effect:
      'A voter (vote or debate) choosing that label, its own answer, nothing, or a label that does not exist; ' +
      'a vote chairman with :voteX names X when breaking a tie.',
    example: 'sim/hermes:voteB',
  },
  {
    syntax: ':stubborn / :fixed / :value<N> / :option<K>',
    effect:
      'A Delphi panelist that never moves from a far-off answer, that answers what every :fixed panelist ' +
      'answers, that always answers N, or that always answers option K of a qualitative question.',
    example: 'sim/apollo:stubborn',
  },
  {
    syntax: ':nonnumeric / :noline / :noconfidence / :scale / :byname',
    effect:
      'A Delphi panelist with no number, no ESTIMATE: line, no confidence, "42.0 million", or an option ' +
      'named instead of numbered.',
    example: 'sim/athena:noconfidence',
  },
  {
    syntax: ':numeric / :qualitative',
    effect: 'A Delphi facilitator classifying the question that way.',
    example: 'sim/chairman:qualitative',
  },
  {
    syntax: ':acc<N>',
    effect:
      'In a graded run (an item with an expected answer), right N % of the time, drawn per item, SIM_SEED ' +
      'and name; otherwise a plausible wrong answer (acc0 without the directive). Answers end with a ' +
      'FINAL ANSWER: line; a Delphi panelist with a numeric expected answer estimates it exactly, or a ' +
      'value 5-50 % off, and moves toward the median in later rounds.',
    example: 'sim/athena:acc70',
  },
  {
    syntax: ':follow / :keep / :random',
    effect:
      'In a graded run, a chairman, voter or reviser answering what a strict majority of the answers it is ' +
      'shown give, else its own (follow, the default); its own (keep); or one of them at random.',
    example: 'sim/chairman:follow',
  },
  {
    syntax: 'as a judge (grader type model)',
    effect:
      "A model grader's judge: CORRECT when the graded answer's final line equals the expected answer once " +
      'normalized, else INCORRECT, with a reason; with acc<N>, truthful N % of the time.',
    example: 'sim/judge:acc90',
  },
];

/** What `@kind` may name: the kinds of prompt the simulator tells apart. */
export const SIM_PROMPT_KINDS: readonly string[] = [
  'answer',
  'rank',
  'synthesis',
  'evaluation',
  'foreman',
  'revision',
  'vote',
  'classify',
  'estimate',
  'reestimate',
  'report',
  'tiebreak',
  'grade',
  'title',
];

const capitalised = (name: string): string => name.charAt(0).toUpperCase() + name.slice(1);

/**
 * The simulated entries: the documented personas, then any other `sim/…` id `configured` names
 * (the operator's default rosters), each once.
 */
export function simulatedPanel(configured: readonly string[] = []): ModelEntry[] {
  const entries: ModelEntry[] = PERSONAS.map(({ name, role }) => ({
    id: `sim/${name}`,
    provider: 'simulated',
    name: `${capitalised(name)} (simulated)`,
    description: `${SIMULATED_DESCRIPTION} Suggested as ${role}.`,
  }));
  const seen = new Set(entries.map((e) => e.id));
  for (const id of configured) {
    if (!id.startsWith('sim/') || !isModelId(id) || seen.has(id)) continue;
    seen.add(id);
    entries.push({
      id,
      provider: 'simulated',
      name: `${id.slice('sim/'.length)} (simulated)`,
      description: `${SIMULATED_DESCRIPTION} Named by this deployment's default rosters.`,
    });
  }
  return entries;
}
