import {
  storedGradeOf,
  type GainGrade,
  type ModeName,
  type PanelGainItem,
  type PanelGainMember,
} from '@conclave/contracts';
import { labelPosition } from './extract';
import { asNumber, asObject, type ReportItem, type ReportStageRow } from './rows';

/**
 * Panel gain from stored rows (issue 37, item 3): one `PanelGainItem` per graded complete item of
 * council, vote, debate and Delphi, from the grades the stage rows carry (`parsed_data.grade`,
 * written once when the answer was graded) — never regraded here.
 *
 * Seats are roster positions, as the report's comparisons by seat: council's answer labels follow
 * the roster (Response A = seat 1, the `stage2_label_map` row), vote's, debate's and Delphi's rows
 * carry their 0-based participant. The panel's answer is the mode's final graded row (council
 * `stage3`, `vote_winner`, `debate_winner`, Delphi's last `round_<n>_stats`).
 */

/** The modes with a panel and its members' own answers. */
export const PANEL_GAIN_MODES = ['council', 'vote', 'debate', 'delphi'] as const;
export type PanelGainMode = (typeof PANEL_GAIN_MODES)[number];

export const isPanelGainMode = (mode: ModeName): mode is PanelGainMode =>
  (PANEL_GAIN_MODES as readonly string[]).includes(mode);

/** Whether any of the rows carries a stored grade: the item was graded. */
export const hasGrades = (rows: readonly ReportStageRow[]): boolean =>
  rows.some((r) => storedGradeOf(r.data) !== null);

const gradeOf = (row: ReportStageRow | undefined): GainGrade =>
  row ? (storedGradeOf(row.data)?.verdict ?? null) : null;

const seatOfParticipant = (row: ReportStageRow, i: number): number => (row.participant ?? i) + 1;

/** A numeric expected answer (a number, or a string holding only one), else null. */
export function numericExpected(expected: string | number | null | undefined): number | null {
  if (typeof expected === 'number') return Number.isFinite(expected) ? expected : null;
  if (typeof expected !== 'string' || !/^\s*[-+]?(\d+\.?\d*|\.\d+)(e[-+]?\d+)?\s*$/i.test(expected))
    return null;
  const value = Number(expected);
  return Number.isFinite(value) ? value : null;
}

function councilMembers(rows: readonly ReportStageRow[]): PanelGainMember[] {
  const labels = asObject(rows.find((r) => r.stageType === 'stage2_label_map')?.data) ?? {};
  const seatOfModel = new Map<string, number>();
  for (const [label, model] of Object.entries(labels)) {
    const seat = labelPosition(label);
    if (seat !== null && typeof model === 'string' && !seatOfModel.has(model)) seatOfModel.set(model, seat);
  }
  const answers = rows.filter((r) => r.stageType === 'stage1');
  // Without a label map (no ranking stage), answers in stored order.
  return answers.map((row, i) => ({
    seat: seatOfModel.get(row.model ?? '') ?? i + 1,
    model: row.model ?? '',
    grade: gradeOf(row),
  }));
}

function seatedMembers(
  rows: readonly ReportStageRow[],
  stageType: string,
  revision?: string,
): PanelGainMember[] {
  const revised = new Map<number, ReportStageRow>();
  if (revision !== undefined) {
    rows.filter((r) => r.stageType === revision).forEach((r, i) => revised.set(seatOfParticipant(r, i), r));
  }
  return rows
    .filter((r) => r.stageType === stageType)
    .map((row, i) => {
      const seat = seatOfParticipant(row, i);
      const member: PanelGainMember = { seat, model: row.model ?? '', grade: gradeOf(row) };
      return revision === undefined ? member : { ...member, revisedGrade: gradeOf(revised.get(seat)) };
    });
}

const ROUND_STATS = /^round_(\d+)_stats$/;

function delphiPanel(
  item: ReportItem,
  rows: readonly ReportStageRow[],
): { panel: GainGrade; delphi: PanelGainItem['delphi'] } {
  const stats = rows
    .map((row) => ({ row, round: Number(ROUND_STATS.exec(row.stageType)?.[1] ?? NaN) }))
    .filter((s) => Number.isInteger(s.round))
    .sort((a, b) => a.round - b.round);
  const first = stats.find((s) => s.round === 1);
  const last = stats.at(-1);
  const expected = numericExpected(item.expected);
  const median = (row: ReportStageRow | undefined) => asNumber(asObject(row?.data)?.median);
  const error = (value: number | null) =>
    expected === null || value === null ? null : Math.abs(value - expected);
  const firstMedian = median(first?.row);
  const finalMedian = median(last?.row);
  return {
    panel: gradeOf(last?.row),
    delphi:
      expected === null || (firstMedian === null && finalMedian === null)
        ? null
        : { firstMedianError: error(firstMedian), finalError: error(finalMedian) },
  };
}

/**
 * The panel-gain record of one complete item from its report rows, or null when the item is not
 * of a panel mode or carries no grade. Seats absent from the item (a member whose call failed) are
 * added by `withAllSeats` once the batch's seats are known.
 */
export function panelGainItem(item: ReportItem, rows: readonly ReportStageRow[]): PanelGainItem | null {
  if (!isPanelGainMode(item.mode) || !hasGrades(rows)) return null;
  const usage = {
    costUsd: item.costUsd ?? null,
    tokens: item.tokens ?? null,
    latencyMs: item.durationMs ?? null,
  };
  const base = { index: item.index, key: item.key };
  switch (item.mode) {
    case 'council':
      return {
        ...base,
        members: councilMembers(rows),
        panel: gradeOf(rows.findLast((r) => r.stageType === 'stage3')),
        ...usage,
      };
    case 'vote':
      return {
        ...base,
        members: seatedMembers(rows, 'initial_answer'),
        panel: gradeOf(rows.findLast((r) => r.stageType === 'vote_winner')),
        ...usage,
      };
    case 'debate':
      return {
        ...base,
        members: seatedMembers(rows, 'initial_answer', 'revision'),
        panel: gradeOf(rows.findLast((r) => r.stageType === 'debate_winner')),
        ...usage,
      };
    case 'delphi': {
      const { panel, delphi } = delphiPanel(item, rows);
      return { ...base, members: seatedMembers(rows, 'round_1'), panel, delphi, ...usage };
    }
  }
}

/**
 * Council: the labels follow the answers that came back, so on an item where a member's call
 * failed the members after it move up a label. Council members are distinct models: each model
 * takes the seat it had on the first item where the most members answered (every seat labelled
 * in roster order), and keeps it on every item. A model never seen on such an item keeps its
 * label's position.
 */
export function councilSeats(items: readonly PanelGainItem[]): PanelGainItem[] {
  const most = Math.max(0, ...items.map((i) => i.members.length));
  const full = items.find((i) => i.members.length === most);
  const seatOf = new Map((full?.members ?? []).map((m) => [m.model, m.seat]));
  return items.map((item) => ({
    ...item,
    members: item.members.map((m) => ({ ...m, seat: seatOf.get(m.model) ?? m.seat })),
  }));
}

/**
 * Every item with every seat the batch saw for its mode (a missing answer is a null grade, so the
 * majority and the member accuracies count it as not correct), members in seat order.
 */
export function withAllSeats(items: readonly PanelGainItem[]): PanelGainItem[] {
  const models = new Map<number, string>();
  let revised = false;
  for (const item of items) {
    for (const m of item.members) {
      if (!models.has(m.seat)) models.set(m.seat, m.model);
      if (m.revisedGrade !== undefined) revised = true;
    }
  }
  const seats = [...models.keys()].sort((a, b) => a - b);
  return items.map((item) => {
    const bySeat = new Map(item.members.map((m) => [m.seat, m]));
    return {
      ...item,
      members: seats.map(
        (seat): PanelGainMember =>
          bySeat.get(seat) ?? {
            seat,
            model: models.get(seat) ?? '',
            grade: null,
            ...(revised ? { revisedGrade: null } : {}),
          },
      ),
    };
  });
}
