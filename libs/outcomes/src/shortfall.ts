import {
  isJudgeCallKey,
  isTerminalStatus,
  type CallSummary,
  type Degradation,
  type DeliberationView,
  type MessageStatus,
  type MissingContribution,
  type MissingKind,
  type ModeName,
  type PartialAnswer,
  type PartialResult,
  type StartedStageCall,
  type StoredStageCall,
} from '@conclave/contracts';
import { modeFacts } from '@conclave/deliberation/facts';
import type { AnyResult } from './final-text';
import { ANONYMOUS_PANELIST, PANEL_ROLE, roleOf } from './roles';

const KIND_VERB: Record<MissingKind, string> = {
  failed: 'failed',
  cancelled: 'was stopped',
  cut: 'was cut',
  unreadable: 'could not be read',
};

/** The longest reason shown for one missing contribution. */
const MAX_WHY = 300;
/** The most missing contributions a summary line names (the list has them all). */
const MAX_NAMED = 4;

/** What is said of a Delphi panelist's failed call while the exercise runs: its kind, never its error text (which may name the model). */
export function anonymousWhy(error: string | null): string {
  return `its call ${KIND_VERB[missingKindOf(error)]}`;
}

/** What a stored call error says happened: stopped by a cancel, cut by a quorum/deadline/end, or failed. */
export function missingKindOf(error: string | null): Exclude<MissingKind, 'unreadable'> {
  const text = (error ?? '').trimStart().toLowerCase();
  if (text.startsWith('cancelled:') || text === 'cancelled') return 'cancelled';
  // `cut: quorum reached`, `cut: stage deadline passed`; `stopped: the deliberation ended` (cap, failure).
  if (text.startsWith('cut:') || text.startsWith('stopped:')) return 'cut';
  return 'failed';
}

const shortWhy = (text: string): string => {
  const line = text.replace(/\s+/g, ' ').trim() || 'the call failed';
  return line.length <= MAX_WHY ? line : `${line.slice(0, MAX_WHY - 1)}…`;
};

/**
 * The stage a cancelled or failed deliberation never committed: the last stage that started calls
 * (its `model_progress started` events; else the stage of its last stored call) when none of that
 * stage's rows were stored. Null when it ended between stages (or did not end so).
 */
export function uncommittedStage(
  mode: ModeName,
  status: MessageStatus,
  rowTypes: readonly string[],
  calls: readonly Pick<CallSummary, 'stage'>[],
  started: readonly Pick<StartedStageCall, 'stage'>[] = [],
): string | null {
  if (status !== 'cancelled' && status !== 'failed') return null;
  const last = started[started.length - 1]?.stage ?? calls[calls.length - 1]?.stage;
  if (last === undefined || last === 'title') return null;
  const stored = new Set(rowTypes);
  return (modeFacts(mode)?.stageRows(last) ?? []).some((type) => stored.has(type)) ? null : last;
}

/**
 * The model behind a started call: its participant where that is the model id, else (Delphi's
 * numbered panelists, key `p<i>`) the roster's i-th panelist from the message's config.
 */
export function startedModelOf(mode: ModeName, config: unknown, call: StartedStageCall): string {
  if (typeof call.participant === 'string') return call.participant;
  const seat = /^p(\d+)$/.exec(call.key);
  const facts = modeFacts(mode);
  const field = facts?.anonymousWhileRunning ? facts.roster.models : null;
  const roster =
    field !== null && typeof config === 'object' && config !== null && field in config
      ? (config as Record<string, unknown>)[field]
      : null;
  const model = seat && Array.isArray(roster) ? (roster as unknown[])[Number(seat[1])] : undefined;
  return typeof model === 'string' ? model : `panelist ${call.participant}`;
}

/**
 * What a call still running when its deliberation ended will store when it settles (the engine's
 * STOPPED_CALL_ERROR): said at once, before that outcome is stored.
 */
const STILL_RUNNING: Record<'cancelled' | 'failed', { kind: MissingKind; why: string }> = {
  cancelled: { kind: 'cancelled', why: 'cancelled: the deliberation was stopped' },
  failed: { kind: 'cut', why: 'stopped: the deliberation ended' },
};

/** As `model_progress` names a call: Delphi's panelists by 1-based number (p0 → 1), others by model. */
function participantOf(mode: ModeName, call: StoredStageCall): string | number {
  const seat = /^p(\d+)$/.exec(call.key);
  return modeFacts(mode)?.anonymousWhileRunning && seat ? Number(seat[1]) + 1 : call.model;
}

/**
 * What a cancelled or failed deliberation kept of the stage it never committed: every answer that
 * finished (stored and billed, but not in the mode's result) and the calls that did not finish.
 */
export function partialOf(input: {
  mode: ModeName;
  status: MessageStatus;
  error: string | null;
  /** The uncommitted stage (uncommittedStage), null when it ended between stages. */
  stage: string | null;
  /** That stage's stored calls. */
  calls: readonly StoredStageCall[];
  /** The calls it started (their models resolved): one without a stored outcome was still running. */
  started?: readonly (StartedStageCall & { model: string })[];
}): PartialResult | null {
  const { mode, status, stage } = input;
  // Ended between stages (or before the first): everything it finished is in the mode's result.
  if ((status !== 'cancelled' && status !== 'failed') || stage === null) return null;
  // The model grader's judges (issue 37) are billed calls of the stage, but no contribution to it.
  const calls = input.calls.filter((c) => c.stage === stage && !isJudgeCallKey(c.key));
  const answers: PartialAnswer[] = calls
    .filter((c) => c.ok && c.content !== null)
    .map((c) => ({
      stage: c.stage,
      participant: participantOf(mode, c),
      model: c.model,
      content: c.content ?? '',
      finishReason: c.finishReason,
    }));
  const settled = new Set(calls.map((c) => c.key));
  const cut: MissingContribution[] = [
    ...calls
      .filter((c) => !c.ok)
      .map((c) => ({
        model: c.model,
        role: roleOf(mode, c.stage),
        stage: c.stage,
        kind: missingKindOf(c.error),
        why: shortWhy(c.error ?? 'the call failed'),
      })),
    ...(input.started ?? [])
      .filter((c) => c.stage === stage && !settled.has(c.key))
      .map((c) => ({
        model: c.model,
        role: roleOf(mode, c.stage),
        stage: c.stage,
        ...STILL_RUNNING[status],
      })),
  ];
  return { reason: status, why: input.error, stage, answers, cut };
}

/** Answers the mode stored but could not read: a ranking, vote, revision decision, verdict or scores. */
function unreadableOf(mode: ModeName, result: AnyResult): MissingContribution[] {
  return (modeFacts(mode)?.result.unreadable(result) ?? []).map(({ model, stage, why }) => ({
    model,
    role: roleOf(mode, stage),
    stage,
    kind: 'unreadable',
    why,
  }));
}

/** Delphi: panelists whose call answered but whose estimate is not among the round's valid ones. */
function unreadableEstimates(view: Pick<DeliberationView, 'calls' | 'mode'>, result: AnyResult) {
  if (view.mode !== 'delphi') return [];
  const missing: MissingContribution[] = [];
  for (const round of result.rounds ?? []) {
    const stage = `round_${round.roundNumber}`;
    const valid = round.estimates.map((e) => e.model);
    for (const call of view.calls.filter((c) => c.stage === stage && c.ok)) {
      const at = valid.indexOf(call.model);
      if (at >= 0) valid.splice(at, 1);
      else
        missing.push({
          model: call.model,
          role: roleOf('delphi', stage),
          stage,
          kind: 'unreadable',
          why: 'its estimate could not be read',
        });
    }
  }
  return missing;
}

/** The first stage the panel answered in (council `stage1`, vote `answer`, Delphi `round_1`, …). */
function panelStageOf(mode: ModeName, calls: readonly Pick<CallSummary, 'stage'>[]): string | null {
  return calls.find((c) => roleOf(mode, c.stage) === PANEL_ROLE[mode])?.stage ?? null;
}

/**
 * What the headline's count of the panel's first stage does not show: later panel answers missing
 * ("1 later answer missing") and single seats that failed ("the chairman failed", or "a chairman
 * failed, a fallback answered" when the seat's next model wrote).
 */
function laterOf(
  view: Pick<DeliberationView, 'mode' | 'calls'>,
  missing: readonly MissingContribution[],
  panelStage: string | null,
): string[] {
  const later = missing.filter((m) => m.stage !== panelStage);
  // A member already missing from the first stage is counted there once.
  const missingFirst = new Set(missing.filter((m) => m.stage === panelStage).map((m) => m.model));
  const panel = new Set(
    later
      .filter((m) => m.role === PANEL_ROLE[view.mode] && !missingFirst.has(m.model))
      .map((m) => `${m.stage}\u0000${m.model}`),
  ).size;
  const seats = new Map<string, string>();
  for (const m of later.filter((m) => m.role !== PANEL_ROLE[view.mode])) {
    const answeredAfter = view.calls.some((c) => c.stage === m.stage && c.ok && c.model !== m.model);
    const phrase =
      m.kind === 'unreadable'
        ? `the ${m.role}'s answer could not be read`
        : answeredAfter
          ? `a ${m.role} ${KIND_VERB[m.kind]}, a fallback answered`
          : `the ${m.role} ${KIND_VERB[m.kind]}`;
    seats.set(`${m.role}\u0000${phrase}`, phrase);
  }
  return [
    ...(panel > 0 ? [`${panel} later answer${panel === 1 ? '' : 's'} missing`] : []),
    ...seats.values(),
  ];
}

/**
 * Everyone who was asked and did not give the mode what it needed, and why: failed, cancelled and
 * cut calls, and answers the mode could not read. Null when nobody is missing.
 */
export function degradationOf(
  view: Pick<DeliberationView, 'mode' | 'calls' | 'result'> & {
    partial?: PartialResult | null;
    /** Given while a Delphi exercise runs, its panelists stay unnamed (05-delphi.md): no model, no error text. */
    status?: MessageStatus;
  },
): Degradation | null {
  const result = (view.result ?? {}) as AnyResult;
  const failedCalls: MissingContribution[] = view.calls
    .filter((c) => !c.ok)
    .map((c) => ({
      model: c.model,
      role: roleOf(view.mode, c.stage),
      stage: c.stage,
      kind: missingKindOf(c.error),
      why: shortWhy(c.error ?? 'the call failed'),
    }));
  // Calls still running when the run ended: in its partial's cut before their outcomes are stored.
  const storedAt = new Set(view.calls.map((c) => `${c.stage}\u0000${c.model}`));
  for (const cut of view.partial?.cut ?? []) {
    if (!storedAt.has(`${cut.stage}\u0000${cut.model}`)) failedCalls.push(cut);
  }
  const failedAt = new Set(failedCalls.map((m) => `${m.stage}\u0000${m.model}`));
  const unreadable = [...unreadableOf(view.mode, result), ...unreadableEstimates(view, result)].filter(
    (m) => !failedAt.has(`${m.stage}\u0000${m.model}`),
  );
  const anonymous =
    modeFacts(view.mode)?.anonymousWhileRunning === true &&
    view.status !== undefined &&
    !isTerminalStatus(view.status);
  const missing = [...failedCalls, ...unreadable].map((m) =>
    anonymous && m.role === PANEL_ROLE[view.mode]
      ? {
          ...m,
          model: ANONYMOUS_PANELIST,
          why: m.kind === 'unreadable' ? m.why : `its call ${KIND_VERB[m.kind]}`,
        }
      : m,
  );
  if (missing.length === 0) return null;
  const panelStage = panelStageOf(view.mode, [...view.calls, ...(view.partial?.cut ?? [])]);
  const panelCalls = view.calls.filter((c) => c.stage === panelStage);
  const running = failedCalls.filter(
    (m) => m.stage === panelStage && !storedAt.has(`${m.stage}\u0000${m.model}`),
  );
  const asked = panelCalls.length + running.length;
  const answered = panelCalls.filter((c) => c.ok).length;
  // One entry per model and reason: a member that failed the same way in several stages is named once.
  const groups = new Map<string, MissingContribution[]>();
  for (const m of missing) {
    const key = `${m.model}\u0000${m.kind}\u0000${m.why}`;
    groups.set(key, [...(groups.get(key) ?? []), m]);
  }
  const named = [...groups.values()].map((group) => {
    const [first] = group;
    if (first.stage === panelStage && first.kind !== 'unreadable') {
      const later = [...new Set(group.slice(1).map((m) => m.stage))];
      return `${first.model}: ${first.why}${later.length > 0 ? ` (also in ${later.join(', ')})` : ''}`;
    }
    const roles = [...new Set(group.map((m) => m.role))].join('/');
    const stages = [...new Set(group.map((m) => m.stage))].join(', ');
    return `${first.model} (${roles}, ${stages}): ${first.why}`;
  });
  const head = [
    asked > 0 ? `${answered} of ${asked} answered` : 'Incomplete',
    ...laterOf(view, missing, panelStage),
  ].join(', ');
  const shown = named.slice(0, MAX_NAMED);
  const more = named.length > shown.length ? `; and ${named.length - shown.length} more` : '';
  return { asked, answered, summary: `${head} — ${shown.join('; ')}${more}`, missing };
}
