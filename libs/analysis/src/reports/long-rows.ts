import { deliberationGrades, type ModeName } from '@conclave/contracts';
import { modeFacts } from '@conclave/deliberation/facts';
import { contestFacts, councilFacts, delphiFacts, juryFacts, labelPosition } from './extract';
import {
  asObject,
  asStrings,
  type ReportAttemptRow,
  type ReportCallRow,
  type ReportItem,
  type ReportStageRow,
} from './rows';

/**
 * The long-format export (issue 36): one row per item attempt, per model call and per judgement
 * (ranking place, vote, revision decision, score, verdict, estimate, round, outcome), read from
 * the stored rows with the same extraction the report uses (extract.ts), so that every figure of
 * a report can be recomputed from the export alone. Pure functions: the gateway streams them a
 * page of items at a time.
 *
 * Kinds and what their columns hold (every row carries the item's index, key, reference, mode and
 * the status, attempt and `latest` flag of the attempt it belongs to):
 * - `item`: one per attempt; startedAt/finishedAt (dispatch and completion), durationMs, error.
 * - `call`: one per model call of any attempt; stage, model, ok, tokens, costUsd, latencyMs,
 *   finishedAt (the call's end).
 * Judgement rows, from the latest attempt's stage rows when it is complete or failed (the rows a
 * report reads):
 * - `ranking` (council): one per ranker (`model`, `participant`); parsed.
 * - `rank` (council): one per place of a parsed ranking: `subject` the ranked model, `label` the
 *   label the ranker saw, `value` its place (1 = best; a model listed twice keeps its first place).
 * - `contestant`: one per label shown (council's ranking round, the vote of vote and debate):
 *   `label` → `model`, `value` the label's position (A = 1); vote and debate add one with no label
 *   for a model that answered but was not shown (a model holding two seats has two labels).
 * - `vote` (vote, debate): one per voter (`model`): `label` voted for, `subject` the model that
 *   label stood for, `value` the label's position; parsed = a label was read.
 * - `revision` (debate): one per debater: `verdict` its decision (REVISE / STAND / MERGE); parsed.
 * - `score` (jury): one per juror and dimension: `subject` the dimension, `value` the score.
 * - `verdict` (jury): one per juror: `verdict`; parsed = its assessment parsed. On both, `model`
 *   names the juror as the report does: the model, `model#seat` for a second seat on the item.
 * - `estimate` (Delphi): one per panelist and round: `value`, `previous`, `carriedForward`; parsed.
 * - `round` (Delphi): one per round: `value` the median (numeric), `cv`, `agreement` (0–1), `converged`.
 * - `outcome`: one per item with stage rows. Council: `subject` the best-ranked model. Vote and
 *   debate: `subject` the winner, `label` its label, `tiebroken`, `method` (tiebreak),
 *   `verdict` the debate winner's own revision decision, `value` valid votes. Jury: `verdict` the
 *   final verdict. Delphi: `method` numeric / qualitative, `value` the mode's final value (numeric:
 *   `finalValue`, the last round's mean) or answer (qualitative), `round` the convergence round, `converged`.
 * Graded items (issue 37): every row carries `expected` (the item's expected answer as stored; null
 * when ungraded), and
 * - `answer`: one per graded answer (the rows the engine graded: each member's answer, the
 *   synthesis or winner, each revision, each estimate and round value): `stage` its stage type,
 *   `round` (Delphi), `participant`, `model`, `grade` its verdict (correct / incorrect /
 *   unreadable), `value` what the grader read (absent for an unreadable one), `subject` `final`
 *   for the panel's final answer (else null);
 * - `outcome` then has `grade`: the panel's final answer's verdict.
 */

export type LongRowKind =
  | 'item'
  | 'call'
  | 'ranking'
  | 'rank'
  | 'contestant'
  | 'vote'
  | 'revision'
  | 'score'
  | 'verdict'
  | 'estimate'
  | 'round'
  | 'outcome'
  | 'answer';

export interface LongRow {
  kind: LongRowKind;
  index: number;
  key: string | null;
  reference: string | number | null;
  /** A graded item's expected answer as stored; null when ungraded. */
  expected: string | number | null;
  mode: ModeName;
  messageId: string;
  attempt: number;
  latest: boolean;
  status: string;
  stage: string | null;
  round: number | null;
  participant: number | null;
  model: string | null;
  label: string | null;
  subject: string | null;
  value: number | string | null;
  previous: number | string | null;
  parsed: boolean | null;
  verdict: string | null;
  method: string | null;
  tiebroken: boolean | null;
  carriedForward: boolean | null;
  converged: boolean | null;
  cv: number | null;
  agreement: number | null;
  ok: boolean | null;
  promptTokens: number | null;
  completionTokens: number | null;
  costUsd: number | null;
  latencyMs: number | null;
  startedAt: string | null;
  finishedAt: string | null;
  durationMs: number | null;
  error: string | null;
  /** A graded answer's verdict (`answer` rows, and `outcome` for the final answer's). */
  grade: string | null;
}

/** The columns in CSV order (also every JSONL row's keys, in this order). */
export const LONG_COLUMNS: readonly (keyof LongRow)[] = [
  'kind',
  'index',
  'key',
  'reference',
  'mode',
  'messageId',
  'attempt',
  'latest',
  'status',
  'stage',
  'round',
  'participant',
  'model',
  'label',
  'subject',
  'value',
  'previous',
  'parsed',
  'verdict',
  'method',
  'tiebroken',
  'carriedForward',
  'converged',
  'cv',
  'agreement',
  'ok',
  'promptTokens',
  'completionTokens',
  'costUsd',
  'latencyMs',
  'startedAt',
  'finishedAt',
  'durationMs',
  'error',
  'expected',
  'grade',
];

const EMPTY: Omit<
  LongRow,
  'kind' | 'index' | 'key' | 'reference' | 'expected' | 'mode' | 'messageId' | 'attempt' | 'latest' | 'status'
> = {
  stage: null,
  round: null,
  participant: null,
  model: null,
  label: null,
  subject: null,
  value: null,
  previous: null,
  parsed: null,
  verdict: null,
  method: null,
  tiebroken: null,
  carriedForward: null,
  converged: null,
  cv: null,
  agreement: null,
  ok: null,
  promptTokens: null,
  completionTokens: null,
  costUsd: null,
  latencyMs: null,
  startedAt: null,
  finishedAt: null,
  durationMs: null,
  error: null,
  grade: null,
};

type Fields = Partial<
  Omit<
    LongRow,
    'index' | 'key' | 'reference' | 'expected' | 'mode' | 'messageId' | 'attempt' | 'latest' | 'status'
  >
> & {
  kind: LongRowKind;
};

export interface LongItemInput {
  /** The item's latest attempt as reports read it (key, reference). */
  item: ReportItem;
  /** Every attempt of the item, in attempt order. */
  attempts: readonly ReportAttemptRow[];
  /** Model calls per attempt (message id). */
  calls: ReadonlyMap<string, readonly ReportCallRow[]>;
  /** The latest attempt's stage rows (empty unless it is complete or failed, as for reports). */
  rows: readonly ReportStageRow[];
}

const byParticipant = (a: ReportStageRow, b: ReportStageRow) => (a.participant ?? 0) - (b.participant ?? 0);

/** The judgement rows of one item's stage rows (the latest attempt), as the report extracts them. */
export function judgementRows(mode: ModeName, rows: readonly ReportStageRow[]): Fields[] {
  if (rows.length === 0) return [];
  const out: Fields[] = [];
  switch (mode) {
    case 'council': {
      const facts = councilFacts(rows);
      const rankingRows = rows.filter((r) => r.stageType === 'stage2');
      for (const [label, model] of Object.entries(facts.labelToModel))
        out.push({ kind: 'contestant', model, label, value: labelPosition(label) });
      rankingRows.forEach((row, i) => {
        const ranking = facts.rankings[i];
        out.push({
          kind: 'ranking',
          stage: row.stageType,
          participant: row.participant,
          model: ranking.model,
          parsed: ranking.parsed,
        });
        if (!ranking.parsed) return;
        const seen = new Set<string>();
        for (const label of asStrings(asObject(row.data)?.parsedRanking)) {
          const model = facts.labelToModel[label];
          if (model === undefined || seen.has(model)) continue;
          seen.add(model);
          out.push({
            kind: 'rank',
            stage: row.stageType,
            participant: row.participant,
            model: ranking.model,
            label,
            subject: model,
            value: seen.size,
          });
        }
      });
      out.push({ kind: 'outcome', subject: facts.winner });
      break;
    }
    case 'vote':
    case 'debate': {
      const facts = contestFacts(mode, rows);
      const voteStage = mode === 'vote' ? 'vote' : 'debate_vote';
      const voteRows = rows.filter((r) => r.stageType === voteStage).sort(byParticipant);
      for (const [label, model] of Object.entries(facts.labelToModel))
        out.push({ kind: 'contestant', model, label, value: labelPosition(label) });
      const labelled = new Set(Object.values(facts.labelToModel));
      for (const model of facts.contestants)
        if (!labelled.has(model)) out.push({ kind: 'contestant', model, label: null, value: null });
      facts.votes.forEach((vote, i) => {
        const model = vote.votedFor === null ? undefined : facts.labelToModel[vote.votedFor];
        out.push({
          kind: 'vote',
          stage: voteStage,
          participant: voteRows[i]?.participant ?? null,
          model: vote.voter,
          label: vote.votedFor,
          subject: model ?? null,
          value: vote.votedFor === null ? null : labelPosition(vote.votedFor),
          parsed: vote.votedFor !== null,
        });
      });
      const revisionRows = rows.filter((r) => r.stageType === 'revision').sort(byParticipant);
      facts.revisions.forEach((revision, i) => {
        out.push({
          kind: 'revision',
          stage: 'revision',
          participant: revisionRows[i]?.participant ?? null,
          model: revision.model,
          verdict: revision.decision,
          parsed: revision.parsed,
        });
      });
      out.push({
        kind: 'outcome',
        subject: facts.winner,
        label: facts.winnerLabel,
        value: facts.validVotes,
        tiebroken: facts.tiebroken,
        method: facts.tiebreakMethod,
        verdict: mode === 'debate' ? facts.winnerDecision : null,
      });
      break;
    }
    case 'jury': {
      const facts = juryFacts(rows);
      const jurorRows = rows.filter((r) => r.stageType === 'deliberation').sort(byParticipant);
      facts.jurors.forEach((juror, i) => {
        const row = jurorRows[i];
        const base = { stage: 'deliberation', participant: row?.participant ?? null, model: juror.juror };
        for (const [dimension, score] of juror.scores)
          out.push({ kind: 'score', ...base, subject: dimension, value: score, parsed: juror.parsed });
        out.push({ kind: 'verdict', ...base, verdict: juror.verdict, parsed: juror.parsed });
      });
      out.push({ kind: 'outcome', verdict: facts.finalVerdict });
      break;
    }
    case 'delphi': {
      const facts = delphiFacts(rows);
      for (const round of facts.rounds) {
        for (const answer of round.answers) {
          out.push({
            kind: 'estimate',
            stage: `round_${round.round}`,
            round: round.round,
            participant: answer.participant,
            model: answer.model,
            value: answer.value,
            previous: answer.previous,
            carriedForward: answer.carriedForward,
            parsed: answer.carriedForward ? null : answer.value !== null,
          });
        }
        out.push({
          kind: 'round',
          stage: `round_${round.round}_stats`,
          round: round.round,
          value: round.median,
          cv: round.cv,
          agreement: round.agreement,
          converged: round.converged,
        });
      }
      out.push({
        kind: 'outcome',
        method: facts.type,
        value: facts.type === 'numeric' ? facts.finalValue : facts.finalAnswer,
        round: facts.convergenceRound,
        converged: facts.converged,
      });
      break;
    }
  }
  return out;
}

/** Every long row of one item: its attempts, each followed by its calls, then the judgements. */
export function longRows(input: LongItemInput): LongRow[] {
  const { item } = input;
  const latest = input.attempts.find((a) => a.latest);
  const row = (attempt: ReportAttemptRow | undefined, fields: Fields): LongRow => ({
    ...EMPTY,
    index: item.index,
    key: item.key,
    reference: item.reference,
    expected: item.expected ?? null,
    mode: item.mode,
    messageId: attempt?.messageId ?? item.messageId,
    attempt: attempt?.attempt ?? 1,
    latest: attempt?.latest ?? true,
    status: attempt?.status ?? item.status,
    ...fields,
  });
  const out: LongRow[] = [];
  for (const attempt of input.attempts) {
    out.push(
      row(attempt, {
        kind: 'item',
        startedAt: attempt.dispatchedAt,
        finishedAt: attempt.completedAt,
        durationMs: attempt.durationMs,
        error: attempt.error,
      }),
    );
    for (const call of input.calls.get(attempt.messageId) ?? []) {
      out.push(
        row(attempt, {
          kind: 'call',
          stage: call.stage,
          model: call.model,
          ok: call.ok,
          promptTokens: call.promptTokens,
          completionTokens: call.completionTokens,
          costUsd: call.costUsd,
          latencyMs: call.latencyMs,
          finishedAt: call.finishedAt,
        }),
      );
    }
  }
  const grades = deliberationGrades(input.rows, modeFacts(item.mode));
  for (const fields of judgementRows(item.mode, input.rows)) {
    const final = fields.kind === 'outcome' ? grades?.final : undefined;
    out.push(row(latest, final ? { ...fields, grade: final.grade.verdict } : fields));
  }
  for (const answer of grades?.answers ?? []) {
    const round = /^round_(\d+)(?:_stats)?$/.exec(answer.stageType);
    out.push(
      row(latest, {
        kind: 'answer',
        stage: answer.stageType,
        round: round ? Number(round[1]) : null,
        participant: answer.participant,
        model: answer.model,
        value: answer.grade.extracted ?? null,
        subject: answer === grades?.final ? 'final' : null,
        grade: answer.grade.verdict,
      }),
    );
  }
  return out;
}
