import type {
  Confidence,
  DeliveredEvent,
  DelphiConfig,
  DelphiEstimateSummary,
  DelphiResult,
  NumericStats,
  QualitativeStats,
} from '@conclave/contracts';
import { ConvergenceChart, formatNumber, formatStat, Legend, StackedBars } from '../charts';
import { MainAnswer, ModelReport, Section } from './section';
import { ViewStyles } from './style';

/** The mode's defaults (libs/deliberation delphi.config.ts), used when the run's own are not given. */
export const DEFAULT_THRESHOLDS = { numeric: 0.15, qualitative: 75 } as const;

type Stats = NumericStats | QualitativeStats;
const isNumeric = (stats: Stats): stats is NumericStats => 'mean' in stats;

export interface PanelEstimate {
  /** The same for one panelist in every round. */
  key: string;
  /** 1-based, as the panel saw it ("Participant 2"). */
  participant: number;
  model: string | null;
  value: number | string;
  confidence: Confidence;
  changed: boolean;
  previous: number | string | null;
  reasoning: string | null;
}

export interface PanelRound {
  round: number;
  stats: Stats;
  converged: boolean | null;
  estimates: PanelEstimate[];
}

interface RoundEventData {
  estimates: DelphiEstimateSummary[];
  stats: Stats;
  converged?: boolean;
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null;

/** The `round_complete` events' data by round number. */
function roundEvents(events: readonly DeliveredEvent[]): Map<number, RoundEventData> {
  const found = new Map<number, RoundEventData>();
  for (const event of events) {
    if (event.type !== 'round_complete' || typeof event.round !== 'number' || !isObject(event.data)) continue;
    const data = event.data;
    if (!Array.isArray(data.estimates) || !isObject(data.stats)) continue;
    found.set(event.round, data as unknown as RoundEventData);
  }
  return found;
}

/**
 * Every round so far, from the result (which names the models) and the `round_complete` events
 * (which number the participants), whichever has it; each panelist keeps one key in every round.
 */
export function delphiRounds(
  result: Partial<DelphiResult>,
  events: readonly DeliveredEvent[] = [],
  panelistModels?: readonly string[],
): PanelRound[] {
  const fromEvents = roundEvents(events);
  const fromResult = new Map((result.rounds ?? []).map((r) => [r.roundNumber, r]));
  // Who is Participant n: the roster when given, else the events beside the result, else order.
  const numberOf = new Map<string, number>();
  panelistModels?.forEach((model, i) => numberOf.has(model) || numberOf.set(model, i + 1));
  for (const [round, stored] of fromResult) {
    const announced = fromEvents.get(round)?.estimates;
    if (!announced || announced.length !== stored.estimates.length) continue;
    stored.estimates.forEach(
      (e, i) => numberOf.has(e.model) || numberOf.set(e.model, announced[i].participantIndex),
    );
  }
  for (const stored of fromResult.values()) {
    for (const e of stored.estimates) if (!numberOf.has(e.model)) numberOf.set(e.model, numberOf.size + 1);
  }
  const rounds = [...new Set([...fromResult.keys(), ...fromEvents.keys()])].sort((a, b) => a - b);
  return rounds.map((round): PanelRound => {
    const stored = fromResult.get(round);
    const announced = fromEvents.get(round);
    if (stored) {
      return {
        round,
        stats: stored.stats,
        converged: stored.converged,
        estimates: stored.estimates.map((e) => {
          const participant = numberOf.get(e.model) ?? 0;
          const numeric = 'estimate' in e;
          return {
            key: `p${participant}`,
            participant,
            model: e.model,
            value: numeric ? e.estimate : e.answer,
            confidence: e.confidence,
            changed: e.changed,
            previous: numeric ? e.previousEstimate : e.previousAnswer,
            reasoning: e.reasoning,
          };
        }),
      };
    }
    const data = announced as RoundEventData;
    return {
      round,
      stats: data.stats,
      converged: typeof data.converged === 'boolean' ? data.converged : null,
      estimates: data.estimates.map((e) => ({
        key: `p${e.participantIndex}`,
        participant: e.participantIndex,
        model: null,
        value: e.estimate ?? e.answer ?? '',
        confidence: e.confidence,
        changed: e.changed,
        previous: null,
        reasoning: null,
      })),
    };
  });
}

/** Whether a round converged under threshold `t` (delphi.stats.ts hasConverged). */
const convergesAt = (stats: Stats, t: number) =>
  isNumeric(stats)
    ? stats.stdDev === 0 || (stats.cv !== null && stats.cv < t)
    : stats.agreementPercentage >= t;

/**
 * The threshold to draw: the run's own when given; else the default, when every round's
 * converged flag agrees with it; else none (the run used a threshold this page does not know).
 */
export function convergenceThreshold(
  numeric: boolean,
  rounds: readonly PanelRound[],
  config?: Partial<Pick<DelphiConfig, 'numericConvergenceThreshold' | 'qualitativeConvergenceThreshold'>>,
): { value: number; source: 'run' | 'default' } | null {
  const given = numeric ? config?.numericConvergenceThreshold : config?.qualitativeConvergenceThreshold;
  if (typeof given === 'number') return { value: given, source: 'run' };
  const fallback = numeric ? DEFAULT_THRESHOLDS.numeric : DEFAULT_THRESHOLDS.qualitative;
  const agrees = rounds.every((r) => r.converged === null || convergesAt(r.stats, fallback) === r.converged);
  return agrees ? { value: fallback, source: 'default' } : null;
}

const shown = (value: number | string) => (typeof value === 'number' ? formatStat(value) : value);

export function DelphiView({
  result,
  events = [],
  config,
}: {
  result: Partial<DelphiResult>;
  events?: DeliveredEvent[];
  /** The run's settings, when the page has them: the convergence threshold and the roster. */
  config?: Partial<DelphiConfig>;
}) {
  const rounds = delphiRounds(result, events, config?.panelistModels);
  const numeric =
    result.classification?.type === 'numeric' || (rounds.length > 0 && isNumeric(rounds[0].stats));
  const revealed = result.report !== undefined;
  const threshold = convergenceThreshold(numeric, rounds, config);
  const nameOf = (e: PanelEstimate) => (revealed && e.model ? e.model : `Participant ${e.participant}`);
  const panelists = [...new Map(rounds.flatMap((r) => r.estimates).map((e) => [e.key, e])).values()].sort(
    (a, b) => a.participant - b.participant,
  );
  const answers = [
    ...new Set([
      ...(result.classification?.options ?? []),
      ...rounds.flatMap((r) => (isNumeric(r.stats) ? [] : r.stats.distribution.map((d) => d.answer))),
    ]),
  ];
  const byDefault = threshold?.source === 'default' ? ', the mode’s default' : '';
  const thresholdText = threshold
    ? numeric
      ? `Converged when the standard deviation is under ${formatNumber(threshold.value * 100)}% of the mean (CV < ${threshold.value}${byDefault}).`
      : `Converged at ${threshold.value}% agreement${byDefault ? ' (the mode’s default)' : ''}.`
    : null;
  return (
    <div className="result delphi">
      <ViewStyles />
      {result.classification && (
        <p className="banner">
          {result.classification.type.toUpperCase()} question — {result.classification.reasoning}
        </p>
      )}
      {result.report && (
        <MainAnswer
          label="report"
          heading={
            <>
              {result.finalValue === undefined ? '' : shown(result.finalValue)}{' '}
              <span className={`badge ${result.converged ? 'badge-ok' : 'badge-warn'}`}>
                {result.converged ? `Converged in round ${result.convergenceRound}` : 'Max rounds reached'}
              </span>
            </>
          }
        >
          {result.report.median !== undefined && (
            <p className="stat-line">
              <span>median {formatStat(result.report.median)}</span>
              {result.report.confidenceInterval && (
                <span>
                  95% confidence interval of the mean {formatStat(result.report.confidenceInterval.low)} –{' '}
                  {formatStat(result.report.confidenceInterval.high)}
                </span>
              )}
            </p>
          )}
          <ModelReport model={result.report.facilitatorModel} text={result.report.report} />
        </MainAnswer>
      )}
      {rounds.length > 0 && (
        <Section label="rounds" heading="Rounds">
          {numeric ? (
            <div className="figure">
              <ConvergenceChart
                title="Estimates by round"
                threshold={threshold?.value ?? null}
                rounds={rounds
                  .filter((r) => isNumeric(r.stats))
                  .map((r) => {
                    const stats = r.stats as NumericStats;
                    return {
                      round: r.round,
                      mean: stats.mean,
                      sd: stats.stdDev,
                      estimates: r.estimates
                        .filter((e) => typeof e.value === 'number')
                        .map((e) => ({
                          key: e.key,
                          name: nameOf(e),
                          value: e.value as number,
                          series: e.participant - 1,
                        })),
                    };
                  })}
              />
              <Legend
                label="chart legend"
                items={[
                  ...panelists.map((e) => ({
                    key: e.key,
                    swatch: `dot series-${(e.participant - 1) % 7}`,
                    label: nameOf(e),
                  })),
                  { key: 'mean', swatch: 'line', label: 'mean' },
                  { key: 'band', swatch: 'band', label: '±1 standard deviation' },
                  ...(threshold
                    ? [
                        {
                          key: 'threshold',
                          swatch: 'dashed',
                          label: `convergence zone: mean ± ${formatNumber(threshold.value * 100)}%`,
                        },
                      ]
                    : []),
                ]}
              />
            </div>
          ) : (
            <StackedBars
              title="Answers by round"
              answers={answers}
              threshold={threshold?.value ?? null}
              rounds={rounds
                .filter((r) => !isNumeric(r.stats))
                .map((r) => {
                  const stats = r.stats as QualitativeStats;
                  return { round: r.round, parts: stats.distribution, agreement: stats.agreementPercentage };
                })}
            />
          )}
          {thresholdText && <p className="muted threshold-note">{thresholdText}</p>}
          {rounds.map((r) => (
            <details key={r.round} open={r === rounds[rounds.length - 1]}>
              <summary>
                Round {r.round}:{' '}
                {isNumeric(r.stats)
                  ? `mean ${formatStat(r.stats.mean)}, median ${formatStat(r.stats.median)}, standard deviation ${formatStat(r.stats.stdDev)}${r.stats.cv === null ? '' : `, CV ${r.stats.cv.toFixed(2)}`}`
                  : `most common "${r.stats.mode}", agreement ${r.stats.agreementPercentage}%`}
                {r.converged !== null && ` — ${r.converged ? 'converged' : 'not converged'}`}
              </summary>
              <div className="cards estimate-cards">
                {r.estimates.map((e) => (
                  <article key={e.key} className="card estimate-card" data-key={e.key}>
                    <h4>{nameOf(e)}</h4>
                    <p className="estimate-value">{shown(e.value)}</p>
                    <small>
                      {e.confidence} confidence
                      {e.changed
                        ? e.previous !== null
                          ? ` · changed from ${shown(e.previous)}`
                          : ' · changed'
                        : ''}
                    </small>
                    {e.reasoning && <p className="muted">{e.reasoning}</p>}
                  </article>
                ))}
              </div>
            </details>
          ))}
        </Section>
      )}
    </div>
  );
}
