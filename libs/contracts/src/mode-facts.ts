import type { ModeName } from './modes';

/**
 * What the rest of the system needs to know about a mode, as data and small pure readers: each
 * mode declares its own in its folder (`libs/deliberation/src/modes/<mode>/<mode>.facts.ts`), and
 * every consumer (gateway, outcomes, analysis, CLI) asks these instead of branching on the mode's
 * name. A mode's facts import nothing but these contracts, so that code that must also run in a
 * browser can read them (`@conclave/deliberation/facts`).
 */
export interface ModeFacts {
  mode: ModeName;
  /** The mode's name as a heading says it ("Council"). */
  title: string;
  /** One sentence for API and MCP documentation: what the mode does. */
  summary: string;
  /** The role of the panel's members (the mode documents' word: council, voter, juror, ...). */
  panelRole: string;
  /** The stages whose calls are made in another role than the panel's (council's `stage3`: chairman). */
  stageRoles: Readonly<Record<string, string>>;
  /** Whom the final text is credited to (the chairman, the winner, ...). */
  finalRole: string;
  /**
   * The stage whose single call writes the final text, streamed as it is written, and the event
   * that opens it; null where the final text is a panel member's own answer (the winner's).
   */
  finalStage: { stage: string; startEvent: string } | null;
  /**
   * Whether the panel stays anonymous until the deliberation ends (Delphi's estimates): its
   * members are called by number while it runs (call key `p<i>`, participant i + 1).
   */
  anonymousWhileRunning: boolean;
  /**
   * The stage rows a stage's commit writes: a stage whose calls were stored but none of whose
   * rows were is a stage that was never committed. Empty for a name that is no stage.
   */
  stageRows(stage: string): readonly string[];
  /**
   * What a batch item's `reference` names for this mode (issue 21): the model expected to win,
   * the expected verdict (APPROVE, REVISE, REJECT), or the expected value or answer.
   */
  reference: 'winner' | 'verdict' | 'estimate';
  /**
   * Batch reports' parse-failure rates (libs/analysis): whether a stored row holds an answer the
   * mode's parser had to read (a ranking, a vote, a revision decision, a juror's assessment, an
   * estimate) and could; null for a row that holds none.
   */
  parsedAnswer(row: { stageType: string; data: unknown }): boolean | null;
  /**
   * Graded items (issue 37, item 2): the answer a stored row holds, as the text a grader reads
   * (a reply, a revised answer, the winning answer, an estimate as a number's text), or null for a
   * row that holds none (rankings, votes, tallies, label maps, a carried-forward estimate). The
   * engine grades each such row of a graded turn once, as its stage is reduced, into
   * `parsedData.grade`. Absent: the mode's rows are not graded (jury: verdicts, not answers).
   */
  gradedAnswer?(row: { stageType: string; content: string; data: unknown }): string | null;
  /**
   * Whether a graded row of this stage type holds the panel's answer (council `stage3`, vote
   * `vote_winner`, debate `debate_winner`, Delphi `round_<n>_stats`): the last one stored is the
   * panel's final answer. With `gradedAnswer`.
   */
  gradedFinal?(stageType: string): boolean;
  /** How libs/outcomes reads the mode's (possibly partial) Result; see ResultReading. */
  result: ResultReading;
  /** Where the mode's config keeps its panel and its chairman-like role. */
  roster: { models: string; chairman?: string };
  /**
   * Whether a request may also give the roster as top-level fields (`councilModels`,
   * `chairmanModel`: council's original request shape).
   */
  topLevelRoster: boolean;
  /**
   * The `modeConfig` field holding the material the mode evaluates (jury's `content`), whose
   * request `question` only names it; null for a mode that deliberates on the question itself.
   */
  contentField: string | null;
}

/**
 * What libs/outcomes reads from a mode's stored Result (`DeliberationView.result`, partial while
 * it runs; any field may be missing): each mode reads its own fields.
 */
export interface ResultReading {
  /** The final text (a synthesis, the winning answer, a report); null while it does not exist. */
  finalText(result: unknown): string | null;
  /** The model that wrote the final text (the winner's, in modes without a final stage). */
  finalAuthor(result: unknown): string | undefined;
  /** Whether enough of the panel answered for the mode's rules, on the stages reached; null before. */
  enoughAnswered(result: unknown): boolean | null;
  /** The seats the result lists, in its order (the panel's answers, or Delphi's first estimates). */
  seated(result: unknown): string[];
  /** Answers the mode stored but could not read (a ranking, a vote, a decision, scores). */
  unreadable(result: unknown): { model: string; stage: string; why: string }[];
}

/** The role a call of `stage` was made in. */
export const roleOfStage = (facts: ModeFacts, stage: string): string =>
  Object.hasOwn(facts.stageRoles, stage) ? facts.stageRoles[stage] : facts.panelRole;

/** `stageRows` from a table of stage → rows (an unknown stage writes none). */
export const stageRowsFrom =
  (table: Readonly<Record<string, readonly string[]>>) =>
  (stage: string): readonly string[] =>
    Object.hasOwn(table, stage) ? table[stage] : [];

/** A stored row's `data` as an object; null for anything else (an array, a scalar, none). */
export const rowObject = (value: unknown): Record<string, unknown> | null =>
  typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : null;
