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
export {
  BEST_MEMBER_NOTE,
  gainTest,
  gradedAccuracy,
  HELD_OUT_NOTE,
  MAJORITY_RULE,
  majorityCorrect,
  MIN_DISCORDANT_FOR_TEST,
  MIN_ITEMS_FOR_HELD_OUT_BEST,
  pairedAccuracyDifference,
  panelGain,
  panelGainMethods,
  UNREADABLE_RULE,
  type GradeTally,
} from './panel-gain';
export {
  differenceSentence,
  panelGainMarkdown,
  panelGainSentences,
  signedPoints,
  testSentence,
} from './panel-gain-text';
export {
  PANEL_GAIN_MODES,
  councilSeats,
  hasGrades,
  isPanelGainMode,
  numericExpected,
  panelGainItem,
  withAllSeats,
  type PanelGainMode,
} from './panel-gain-items';
