export * from './rows';
export {
  bootstrapFigure,
  chiSquareUpperTail,
  clusteredRate,
  distribution,
  plainFigure,
  pooledRate,
  quantiles,
  rate,
  reportInterval,
  standardErrorFigure,
} from './figures';
export * from './extract';
export { bootstrapMeans } from './bootstrap-columns';
export { ReferenceTracker, NumericReferenceTracker, predictionInterval } from './reference';
export { PositionTracker, notComputablePositionBias, REPORT_POSITION_RESAMPLES } from './position';
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
