export * from './rows';
export {
  bootstrapFigure,
  chiSquareUpperTail,
  distribution,
  plainFigure,
  quantiles,
  rate,
  reportInterval,
  standardErrorFigure,
} from './figures';
export * from './extract';
export { ReferenceTracker, NumericReferenceTracker } from './reference';
export { PositionTracker, notComputablePositionBias } from './position';
export { CouncilReportBuilder, COUNCIL_POSITION_EXPLANATION } from './council';
export { ContestReportBuilder, DEBATE_POSITION_EXPLANATION, VOTE_POSITION_EXPLANATION } from './contest';
export { JuryReportBuilder, normaliseVerdict } from './jury';
export { DelphiReportBuilder, numericReference } from './delphi';
export {
  BatchReportBuilder,
  modelUsage,
  parsedAnswer,
  usageSummary,
  type BatchReportMeta,
  type BatchReportOptions,
} from './batch-report';
export { ComparisonSide, compareSides, type ComparisonMeta } from './compare';
export {
  LONG_COLUMNS,
  judgementRows,
  longRows,
  type LongItemInput,
  type LongRow,
  type LongRowKind,
} from './long-rows';
