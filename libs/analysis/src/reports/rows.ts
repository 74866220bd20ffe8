import type { ReportItem } from '@conclave/contracts';

/** The rows a report reads: their shapes are @conclave/contracts', shared with the repository that selects them. */
export type {
  ReportAggregates,
  ReportAttemptRow,
  ReportCallRow,
  ReportCallAggregate,
  ReportFailureRow,
  ReportItem,
  ReportStageCalls,
  ReportStageRow,
  ReportUsageAggregate,
} from '@conclave/contracts';

// Defensive readers for stored JSON: a row written by an older version may lack a field.

export type Json = Record<string, unknown>;

export const asObject = (value: unknown): Json | null =>
  typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Json) : null;

export const asString = (value: unknown): string | null => (typeof value === 'string' ? value : null);

export const asNumber = (value: unknown): number | null =>
  typeof value === 'number' && Number.isFinite(value) ? value : null;

export const asStrings = (value: unknown): string[] =>
  Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : [];

export const webPath = (messageId: string): string => `#/m/${messageId}`;

export const itemLink = (item: Pick<ReportItem, 'index' | 'key' | 'messageId'>) => ({
  index: item.index,
  key: item.key,
  messageId: item.messageId,
  webPath: webPath(item.messageId),
});
