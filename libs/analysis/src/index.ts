/**
 * @conclave/analysis — the statistics behind batch reports and comparisons (issue 21).
 *
 * Plain TypeScript, no framework and no Node-only modules, so it runs in the gateway, the worker
 * and the browser alike. Everything is built as accumulators fed one item at a time and read once
 * with `result()`, so a report streams over stored rows instead of loading a whole batch. Where an
 * interval needs per-item values (bootstraps, exact quantiles) those are kept as compact numeric
 * columns: 8 bytes per item and column, 80 KB per column for 10 000 items.
 *
 * Undefined statistics (no data, no variation) come back as `value: null` with a `reason`, never
 * NaN or Infinity.
 */

export {
  type Computed,
  type Estimate,
  type EstimateWithInterval,
  type Interval,
  type IntervalMethod,
  type NotComputable,
} from './result';
export { fnv1a32, SeededRandom, seedToUint32, type Seed } from './random';
export { normalQuantile, twoSidedZ } from './normal';
export { NumericSample, quantileOfSorted } from './quantile';
export {
  CategoryCounts,
  RunningStats,
  TopK,
  type CategoryDistribution,
  type CategoryShare,
  type Ranked,
  type RunningStatsResult,
} from './descriptive';
export {
  proportion,
  WinCounter,
  wilsonInterval,
  type ProportionEstimate,
  type WinRecord,
  type WinSummary,
} from './proportion';
export {
  bootstrapItems,
  bootstrapMean,
  DEFAULT_BOOTSTRAP_RESAMPLES,
  DEFAULT_CONFIDENCE,
  DEFAULT_SEED,
  pairedBootstrap,
  percentileInterval,
  type BootstrapEstimate,
  type BootstrapOptions,
  type ItemStatistic,
  type PairedBootstrapOptions,
  type SampleStatistic,
} from './bootstrap';
export {
  KrippendorffAlphaAccumulator,
  krippendorffAlpha,
  type CodedValue,
  type CoincidenceMatrix,
  type KrippendorffAlphaResult,
  type KrippendorffLevel,
} from './krippendorff';
export { FleissKappaAccumulator, type FleissKappaResult } from './fleiss';
export { CohenKappaAccumulator, type CohenKappaResult } from './cohen';
export {
  ALPHA_THRESHOLDS,
  interpretAlpha,
  interpretKappa,
  KAPPA_SCALE,
  type AlphaReading,
  type KappaReading,
} from './interpret';
export {
  CouncilRankingAccumulator,
  type CouncilRankingReport,
  type ModelRanking,
  type RankingBallot,
  type SelfPreference,
} from './ranking';
export {
  LeniencyAccumulator,
  type DimensionLeniency,
  type DimensionRating,
  type RaterLeniency,
} from './leniency';
export * from './reports';
export { csvCell, CsvSyntaxError, neutraliseCell, parseCsv, writeCsv, type CsvRecord } from './datasets/csv';
export {
  datasetFormatOf,
  describeProblem,
  isNumericAnswer,
  parseDataset,
  questionWithChoices,
  type DatasetFormat,
  type DatasetItem,
  type DatasetProblem,
  type GraderHint,
  type ParseDatasetOptions,
  type ParsedDataset,
} from './datasets/dataset';
export {
  EXAMPLE_DATASET_SEED,
  EXAMPLE_DATASET_SIZE,
  exampleDataset,
  exampleDatasetFiles,
  type ExampleItem,
} from './datasets/example-dataset';
export {
  clusteredProportion,
  type ClusterCount,
  type ClusteredProportion,
} from './inference/cluster-proportion';
export { exactMcNemar, holmAdjust } from './inference/exact';
export {
  positionPermutationTest,
  type PositionItem,
  type PositionTestResult,
} from './inference/position-permutation';
export { tInterval, twoSidedT } from './inference/student-t';
export { tangoPairedInterval, tangoScore } from './inference/paired-difference';
export { bootstrapStatistics, FleissKappaItems, IntervalAlphaUnits } from './inference/agreement-bootstrap';
