/**
 * The report of a batch (`#/batches/<id>/report`): what its finished items say, per mode, with the
 * numbers' intervals drawn as whiskers, agreement values with their conventional reading, the items
 * worth opening linked, and the same report as Markdown to copy or download.
 *
 * Loaded on demand (App.tsx imports it lazily). Every string the server sends (model ids, error
 * texts, keys, category names) is shown as a plain text node: none is parsed as HTML.
 */
import type {
  BatchReport,
  BatchUsageSummary,
  ReportCategoryCount,
  ReportCouncil,
  ReportDebate,
  ReportDelphi,
  GainTest,
  GradedAccuracy,
  PairedAccuracyDifference,
  ReportPanelGain,
  ReportDistribution,
  ReportFailures,
  ReportFigure,
  ReportInterval,
  ReportItemLink,
  ReportJury,
  ReportMethod,
  ReportModelUsage,
  ReportPositionBias,
  ReportPositionTest,
  ReportQuantiles,
  ReportRate,
  ReportReferenceAgreement,
  ReportReferenceExclusions,
  ReportVote,
} from '@conclave/contracts';
import { Fragment, useCallback, useEffect, useState, type ReactNode } from 'react';
import { api, ApiFailure, apiKey } from './api';
import { BarChart, formatStat, formatTick, niceTicks, type Bar } from './charts';
import { ComparePicker } from './compare-picker';
import { ViewStyles } from './views/style';

// ---------------------------------------------------------------------------------------------
// Numbers as a reader sees them

const DASH = '—';

/** A share as a percentage with one decimal (`41.7%`). */
export const pct = (value: number | null | undefined): string =>
  value === null || value === undefined ? DASH : `${(value * 100).toFixed(1)}%`;

/** A value already in percent (`12.5` → `12.5%`), e.g. a mean absolute percentage error. */
export const percentUnits = (value: number | null | undefined): string =>
  value === null || value === undefined ? DASH : `${value.toFixed(1)}%`;

/** A statistic with as many decimals as its size calls for. */
export const num = (value: number | null | undefined): string =>
  value === null || value === undefined ? DASH : formatStat(value);

/** A signed statistic (`+0.42`, `−0.10`). */
export const signed = (value: number | null | undefined): string =>
  value === null || value === undefined
    ? DASH
    : `${value > 0 ? '+' : value < 0 ? '−' : ''}${formatStat(Math.abs(value))}`;

/** Three decimals, for agreement coefficients. */
export const coef = (value: number | null | undefined): string =>
  value === null || value === undefined ? DASH : value.toFixed(3);

export const usd = (value: number | null | undefined): string =>
  value === null || value === undefined
    ? DASH
    : `$${value >= 100 ? value.toFixed(2) : value >= 1 ? value.toFixed(3) : value.toFixed(4)}`;

export const ms = (value: number | null | undefined): string =>
  value === null || value === undefined
    ? DASH
    : value >= 10_000
      ? `${formatStat(value / 1000)} s`
      : `${formatStat(value)} ms`;

const whole = new Intl.NumberFormat('en-US');
export const count = (value: number): string => whole.format(value);

export const intervalText = (interval: ReportInterval | null, format: (v: number) => string): string =>
  interval ? `${format(interval.lower)} to ${format(interval.upper)}` : '';

/** A figure with its 95 % interval under it, or the reason it has none. */
export function FigureValue({
  figure,
  format = num,
}: {
  figure: ReportFigure;
  format?: (v: number | null) => string;
}) {
  return (
    <span className="figure-value">
      <span className="value">{figure.value === null ? DASH : format(figure.value)}</span>
      {figure.interval && <span className="ci"> [{intervalText(figure.interval, (v) => format(v))}]</span>}
      {figure.note && <span className="note muted"> {figure.note}</span>}
    </span>
  );
}

/** A rate: the share, `count/n` and its interval. */
export function RateValue({ rate }: { rate: ReportRate }) {
  return (
    <span className="figure-value">
      <span className="nowrap">
        <span className="value">{pct(rate.value)}</span>{' '}
        <span className="muted">
          ({count(rate.count)}/{count(rate.n)})
        </span>
      </span>
      {rate.interval && <span className="ci"> [{intervalText(rate.interval, pct)}]</span>}
      {rate.note && <span className="note muted"> {rate.note}</span>}
    </span>
  );
}

const quantiles = (q: ReportQuantiles, format: (v: number | null) => string) =>
  q.n === 0 ? DASH : `${format(q.p50)} median, ${format(q.p95)} p95`;

// ---------------------------------------------------------------------------------------------
// Charts

export interface IntervalRow {
  key: string;
  label: string;
  value: number | null;
  lower: number | null;
  upper: number | null;
}

export const rowOf = (key: string, label: string, figure: ReportFigure): IntervalRow => ({
  key,
  label,
  value: figure.value,
  lower: figure.interval?.lower ?? null,
  upper: figure.interval?.upper ?? null,
});

const shorten = (text: string, max: number) => (text.length > max ? `${text.slice(0, max - 1)}…` : text);

/**
 * Estimates with their 95 % intervals: a point each, the interval a whisker with end caps, on one
 * scale with an axis; a dashed line marks a reference value (0 for a difference, the share with no
 * effect). SVG in a viewBox, so it scales to its container; the label says every value.
 */
export function IntervalChart({
  rows,
  title,
  format,
  min,
  max,
  reference,
  symmetric = false,
  tickFormat = format,
  caption,
}: {
  rows: IntervalRow[];
  title: string;
  format: (v: number) => string;
  min?: number;
  max?: number;
  reference?: { value: number; label: string };
  /** A scale centred on the reference (differences, leniency): as far each way. */
  symmetric?: boolean;
  /** The axis's numbers, when shorter than the values' (`+25` for `+25.0 pts`). */
  tickFormat?: (v: number) => string;
  caption?: string;
}) {
  const W = 320;
  const PAD = 10;
  const ROW = 38;
  const TOP = 4;
  const values = rows.flatMap((r) => [r.value, r.lower, r.upper]).filter((v): v is number => v !== null);
  if (reference) values.push(reference.value);
  let ticks: number[];
  if (symmetric && reference) {
    const reach = Math.max(...values.map((v) => Math.abs(v - reference.value)), 0) || 1;
    const half = niceTicks(0, reach, 3);
    const top = half[half.length - 1];
    ticks = niceTicks(-top, top, 5).map((t) => t + reference.value);
  } else {
    ticks = niceTicks(
      min ?? Math.min(...values, max ?? Infinity),
      max ?? Math.max(...values, min ?? -Infinity),
      5,
    );
  }
  const lo = Math.min(ticks[0], min ?? ticks[0]);
  const hi = Math.max(ticks[ticks.length - 1], max ?? ticks[ticks.length - 1]);
  const x = (v: number) => PAD + ((Math.min(hi, Math.max(lo, v)) - lo) / (hi - lo || 1)) * (W - 2 * PAD);
  const axisY = TOP + rows.length * ROW + 4;
  const H = axisY + 24;
  const describe = (r: IntervalRow) =>
    r.value === null
      ? `${r.label} not computed`
      : `${r.label} ${format(r.value)}${r.lower !== null && r.upper !== null ? ` (95% interval ${format(r.lower)} to ${format(r.upper)})` : ''}`;
  return (
    <figure className="figure interval-figure">
      <div className="chart-title" aria-hidden="true">
        {title}
      </div>
      <svg
        className="svg-chart interval-chart"
        viewBox={`0 0 ${W} ${H}`}
        role="img"
        aria-label={`${title}: ${rows.map(describe).join('; ')}${reference ? `. Dashed line: ${reference.label} (${format(reference.value)})` : ''}`}
      >
        {ticks.map((t) => (
          <line key={t} className="gridline" x1={x(t)} x2={x(t)} y1={TOP} y2={axisY} />
        ))}
        {reference && (
          <line
            className="reference-line"
            x1={x(reference.value)}
            x2={x(reference.value)}
            y1={TOP}
            y2={axisY}
          />
        )}
        {rows.map((r, i) => {
          const labelY = TOP + i * ROW + 13;
          const y = TOP + i * ROW + 28;
          const valueText =
            r.value === null
              ? 'not computed'
              : `${format(r.value)}${r.lower !== null && r.upper !== null ? ` [${format(r.lower)}, ${format(r.upper)}]` : ''}`;
          return (
            <g key={r.key} className="interval-row" data-key={r.key}>
              <title>{describe(r)}</title>
              <text className="row-label" x={PAD} y={labelY}>
                {shorten(r.label, Math.max(12, 50 - valueText.length))}
              </text>
              <text className="row-value" x={W - PAD} y={labelY} textAnchor="end">
                {valueText}
              </text>
              {r.lower !== null && r.upper !== null && (
                <path
                  className="whisker-line"
                  d={`M${x(r.lower)},${y}H${x(r.upper)}M${x(r.lower)},${y - 5}V${y + 5}M${x(r.upper)},${y - 5}V${y + 5}`}
                />
              )}
              {r.value !== null && <circle className="point" cx={x(r.value)} cy={y} r="4.5" />}
            </g>
          );
        })}
        <line className="axis-line x-axis" x1={PAD} x2={W - PAD} y1={axisY} y2={axisY} />
        {ticks.map((t, i) => (
          <text
            key={t}
            className="tick-label"
            x={x(t)}
            y={axisY + 15}
            textAnchor={i === 0 ? 'start' : i === ticks.length - 1 ? 'end' : 'middle'}
          >
            {tickFormat(t)}
          </text>
        ))}
      </svg>
      <ul className="legend" aria-label="chart legend">
        <li>
          <span className="swatch dot series-0" aria-hidden="true" />
          <span>estimate</span>
        </li>
        <li>
          <span className="swatch whisker" aria-hidden="true" />
          <span>95% interval</span>
        </li>
        {reference && (
          <li>
            <span className="swatch dashed" aria-hidden="true" />
            <span>{reference.label}</span>
          </li>
        )}
      </ul>
      {caption && <figcaption>{caption}</figcaption>}
    </figure>
  );
}

const TONES: Record<string, Bar['tone']> = { APPROVE: 'ok', REVISE: 'warn', REJECT: 'bad' };

/** A distribution as horizontal bars (one per category, in the server's order). */
export function DistributionChart({
  distribution,
  title,
}: {
  distribution: ReportDistribution;
  title: string;
}) {
  if (distribution.n === 0 || distribution.categories.length === 0)
    return <p className="muted">{title}: nothing to count.</p>;
  return (
    <BarChart
      title={title}
      bars={distribution.categories.map((c) => ({
        key: c.category,
        label: (
          <>
            {c.category} <span className="muted">{pct(c.share)}</span>
          </>
        ),
        text: c.category,
        value: c.count,
        tone: TONES[c.category],
      }))}
    />
  );
}

const categoriesText = (categories: ReportCategoryCount[]) =>
  categories.length === 0 ? DASH : categories.map((c) => `${c.category} ${count(c.count)}`).join(', ');

// ---------------------------------------------------------------------------------------------
// Pieces every mode uses

/** A batch item as a link to its deliberation. */
export function ItemLink({ item }: { item: ReportItemLink }) {
  return (
    <a className="item-link" href={`#/m/${encodeURIComponent(item.messageId)}`}>
      Item {item.index}
      {item.key !== null && <span className="item-key"> ({item.key})</span>}
    </a>
  );
}

/** "How these numbers were computed": each test and interval method, its unit, resamples and seed. */
export function MethodsSection({ methods }: { methods: readonly ReportMethod[] }) {
  if (methods.length === 0) return null;
  return (
    <section aria-label="how these numbers were computed" className="report-part">
      <h3>How these numbers were computed</h3>
      <Table label="methods" head={['method', 'used for', 'unit', 'resamples', 'seed', 'how']}>
        {methods.map((m, i) => (
          <tr key={i}>
            <th scope="row">{m.name}</th>
            <td>{m.usedFor.join(', ')}</td>
            <td>{m.unit}</td>
            <td className="num">{m.resamples === null ? '—' : count(m.resamples)}</td>
            <td>{m.seed === null ? '—' : <code>{m.seed}</code>}</td>
            <td>{m.description}</td>
          </tr>
        ))}
      </Table>
    </section>
  );
}

/** A table of the report (and of the comparison) that scrolls sideways on a narrow screen. */
export function Table({
  label,
  head,
  caption,
  children,
}: {
  label: string;
  head: ReactNode[];
  caption?: ReactNode;
  children: ReactNode;
}) {
  return (
    <div className="table-scroll">
      <table aria-label={label}>
        {caption !== undefined && <caption>{caption}</caption>}
        <thead>
          <tr>
            {head.map((h, i) => (
              <th key={i} scope="col">
                {h}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>{children}</tbody>
      </table>
    </div>
  );
}

const KAPPA_TEXT =
  'Landis & Koch (1977): ≤ 0 poor, up to 0.20 slight, 0.40 fair, 0.60 moderate, 0.80 substantial, above that almost perfect.';
const ALPHA_TEXT =
  'Krippendorff: rely on α ≥ 0.800; 0.667 to 0.800 allows tentative conclusions only; below 0.667 the ratings do not agree enough to draw conclusions.';

export function Reading({ reading }: { reading: string | null }) {
  if (!reading) return null;
  const tone =
    reading === 'reliable' || reading === 'almost perfect' || reading === 'substantial'
      ? 'ok'
      : reading === 'tentative' || reading === 'moderate'
        ? 'warn'
        : 'bad';
  return <span className={`badge reading reading-${tone}`}>{reading}</span>;
}

/** The items with a reference a section does not compare, with why (issue 36). */
function NotCompared({ exclusions }: { exclusions: ReportReferenceExclusions }) {
  if (exclusions.count === 0) return null;
  const parts = [
    [exclusions.failed, 'failed'],
    [exclusions.cancelled, 'cancelled'],
    [exclusions.unfinished, 'still queued or running'],
    [exclusions.noOutcome, 'without an outcome'],
    [exclusions.unusableReference, 'with a reference that cannot be compared'],
  ] as const;
  return (
    <details className="item-list not-compared">
      <summary>
        Not compared: {count(exclusions.count)} items with a reference (
        {parts
          .filter(([n]) => n > 0)
          .map(([n, what]) => `${count(n)} ${what}`)
          .join(', ')}
        )
      </summary>
      <ul>
        {exclusions.items.map((i) => (
          <li key={i.messageId}>
            <ItemLink item={i} />: {i.reason}
          </li>
        ))}
      </ul>
    </details>
  );
}

function ReferenceSection({ reference }: { reference: ReportReferenceAgreement | null }) {
  if (!reference) return null;
  const { cohen, numeric } = reference;
  return (
    <section aria-label="agreement with the reference" className="report-part">
      <h4>Agreement with the reference</h4>
      <p>
        {count(reference.itemsWithReference)} items carry a reference (
        {count(reference.itemsWithoutReference)} do not), counted over all the mode&apos;s items;{' '}
        {count(reference.matching.n)} are compared with {reference.comparedWith}.
      </p>
      <NotCompared exclusions={reference.notCompared} />
      <dl className="facts">
        <dt>Matches the reference</dt>
        <dd>
          <RateValue rate={reference.matching} />
        </dd>
        {cohen && (
          <>
            <dt>Cohen&apos;s κ</dt>
            <dd>
              <FigureValue figure={cohen.kappa} format={coef} /> <Reading reading={cohen.reading} />
            </dd>
            <dt>Chance agreement</dt>
            <dd>{pct(cohen.expectedAgreement)}</dd>
          </>
        )}
        {numeric && (
          <>
            <dt>Mean absolute error of the final value (the last round&apos;s mean)</dt>
            <dd>
              <FigureValue figure={numeric.meanAbsoluteError} />
            </dd>
            <dt>Median absolute error</dt>
            <dd>{num(numeric.medianAbsoluteError.p50)}</dd>
            <dt>Mean signed error</dt>
            <dd>
              <FigureValue figure={numeric.meanSignedError} format={signed} />
            </dd>
            <dt>Mean absolute percentage error</dt>
            <dd>
              <FigureValue figure={numeric.meanAbsolutePercentageError} format={percentUnits} />
            </dd>
            <dt>Reference inside the 95% prediction interval of the final estimates</dt>
            <dd>
              <RateValue rate={numeric.predictionIntervalCoverage} />{' '}
              <span className="muted">
                (mean ± t·s·√(1 + 1/n): where one more panelist&apos;s answer would fall)
              </span>
            </dd>
            <dt>Reference within the range of the final estimates</dt>
            <dd>
              <RateValue rate={numeric.finalRangeCoverage} />
            </dd>
          </>
        )}
      </dl>
      {cohen && <p className="muted small">{KAPPA_TEXT}</p>}
      {cohen && cohen.categories.length > 0 && (
        <Table
          label="confusion matrix: reference by row, panel by column"
          head={['reference ↓ / panel →', ...cohen.categories]}
        >
          {cohen.categories.map((category, i) => (
            <tr key={category}>
              <th scope="row">{category}</th>
              {cohen.confusion[i]?.map((n, j) => (
                <td key={j} className={i === j ? 'num diagonal' : 'num'}>
                  {count(n)}
                </td>
              ))}
            </tr>
          ))}
        </Table>
      )}
      {reference.mismatches.length > 0 && (
        <details className="item-list">
          <summary>
            {numeric && !cohen ? 'Items outside the prediction interval' : 'Items that do not match'} (
            {reference.mismatches.length} shown)
          </summary>
          <ul>
            {reference.mismatches.map((m) => (
              <li key={m.messageId}>
                <ItemLink item={m} />: reference {m.reference}, panel {m.outcome ?? DASH}
              </li>
            ))}
          </ul>
        </details>
      )}
    </section>
  );
}

const pValueText = (p: number) => (p < 0.001 ? '< 0.001' : p.toFixed(3));

function positionTestText(test: ReportPositionTest): string {
  if (!test.run) return `Not tested: ${test.reason}.`;
  const adjusted =
    test.holmAdjustedPValue === null ? '' : `, Holm-adjusted p = ${pValueText(test.holmAdjustedPValue)}`;
  return (
    `χ² = ${test.statistic.toFixed(2)}, df = ${test.degreesOfFreedom}, p = ${pValueText(test.pValue)}${adjusted} ` +
    `(against an even split; item-level permutation test, ${count(test.resamples)} relabellings).`
  );
}

function PositionBiasSection({ bias }: { bias: ReportPositionBias }) {
  return (
    <section aria-label="position bias" className="report-part">
      <h4>Position bias</h4>
      <p>{bias.explanation}</p>
      {bias.computable &&
        bias.groups.map((g) => (
          <div key={g.answersShown} className="position-group">
            <IntervalChart
              title={`Share of valid votes by the position shown, items with ${g.answersShown} answers`}
              rows={g.positions.map((p) => rowOf(String(p.position), p.label, p.votes))}
              format={pct}
              min={0}
              max={1}
              reference={{ value: 1 / g.answersShown, label: 'no position effect' }}
              caption={`${count(g.items)} items, ${count(g.validVotes)} valid votes. ${positionTestText(g.test)}`}
            />
          </div>
        ))}
    </section>
  );
}

// ---------------------------------------------------------------------------------------------
// Mode sections

/** A leaderboard entry against the next one down: do their 95 % intervals overlap? */
const againstNext = (overlaps: boolean | null | undefined): string =>
  overlaps === true ? 'not distinguishable at 95 %' : overlaps === false ? 'intervals apart' : '—';

function CouncilSection({ council }: { council: ReportCouncil }) {
  const worst = Math.max(
    2,
    ...council.models.map((m) => m.averageRank.interval?.upper ?? m.averageRank.value ?? 1),
  );
  return (
    <section aria-label="council" className="report-mode">
      <h3>Council</h3>
      <p>
        {count(council.items)} complete items, {count(council.ballots)} rankings. Unparsed rankings:{' '}
        <RateValue rate={council.unparsedRankings} />.
      </p>
      <IntervalChart
        title="Average rank per model (1 is best)"
        rows={council.models.map((m) => rowOf(m.model, m.model, m.averageRank))}
        format={formatTick}
        min={1}
        max={Math.ceil(worst)}
        caption="Further left is better: 1 is the best rank. Intervals: bootstrap over items."
      />
      <IntervalChart
        title="Share of items ranked first per model"
        rows={council.models.map((m) => rowOf(m.model, m.model, m.firstPlaceShare))}
        format={pct}
        min={0}
        max={1}
      />
      <Table
        label="council models"
        head={[
          'model',
          'items',
          'average rank',
          'ranked first',
          'Borda points',
          'own rank vs others’',
          'self-preference',
          'vs next below',
        ]}
      >
        {council.models.map((m) => (
          <tr key={m.model}>
            <th scope="row">{m.model}</th>
            <td className="num">{count(m.itemsRanked)}</td>
            <td>
              <FigureValue figure={m.averageRank} />
            </td>
            <td>
              <FigureValue figure={m.firstPlaceShare} format={pct} />
            </td>
            <td className="num">
              {count(m.bordaPoints)}{' '}
              <span className="muted">
                (per item <FigureValue figure={m.bordaPointsPerItem} />)
              </span>
            </td>
            <td>
              {num(m.selfPreference.meanSelfRank)} vs {num(m.selfPreference.meanOthersRank)}{' '}
              <span className="muted">(n {count(m.selfPreference.n)})</span>
            </td>
            <td>
              <FigureValue figure={m.selfPreference.difference} format={signed} />
            </td>
            <td>{againstNext(m.overlapsNext)}</td>
          </tr>
        ))}
      </Table>
      {council.leaderboardNote && <p className="muted small leaderboard-note">{council.leaderboardNote}</p>}
      <p className="muted small">
        Self-preference: the model&apos;s rank of its own anonymized answer minus the others&apos; mean rank
        of it; negative means it favours its own answer.
      </p>
      <h4>Chairman</h4>
      <p>
        {count(council.chairman.itemsReached)} items reached the chairman; failures:{' '}
        <RateValue rate={council.chairman.failures} />.
        {council.chairman.byModel.length > 0 &&
          ` ${council.chairman.byModel.map((c) => `${c.model}: ${count(c.failures)} of ${count(c.items)}`).join('; ')}.`}
      </p>
      <PositionBiasSection bias={council.positionBias} />
      <ReferenceSection reference={council.reference} />
    </section>
  );
}

function ContestSection({ name, vote }: { name: 'vote' | 'debate'; vote: ReportVote | ReportDebate }) {
  const debate = 'revisions' in vote ? vote : null;
  return (
    <section aria-label={name} className="report-mode">
      <h3>{name === 'vote' ? 'Vote' : 'Debate'}</h3>
      <p>
        {count(vote.items)} complete items. Invalid votes: <RateValue rate={vote.invalidVotes} />.
      </p>
      <IntervalChart
        title="Win rate per model"
        rows={vote.models.map((m) => rowOf(m.model, m.model, m.winRate))}
        format={pct}
        min={0}
        max={1}
        caption="Wins after any tiebreak over items the model answered. Intervals: Wilson score."
      />
      <Table
        label={`${name} models`}
        head={[
          'model',
          'items',
          'wins',
          'win rate',
          'tied first',
          'won by tiebreak',
          'vote share',
          'vs next below',
        ]}
      >
        {vote.models.map((m) => (
          <tr key={m.model}>
            <th scope="row">{m.model}</th>
            <td className="num">{count(m.contests)}</td>
            <td className="num">{count(m.wins)}</td>
            <td>
              <RateValue rate={m.winRate} />
            </td>
            <td className="num">{count(m.tiedFirst)}</td>
            <td className="num">{count(m.winsByTiebreak)}</td>
            <td>
              <RateValue rate={m.voteShare} />
            </td>
            <td>{againstNext(m.overlapsNext)}</td>
          </tr>
        ))}
      </Table>
      {vote.leaderboardNote && <p className="muted small leaderboard-note">{vote.leaderboardNote}</p>}
      <h4>Ties</h4>
      <p>
        Tied at the top: <RateValue rate={vote.ties.tied} />. Broken by: {categoriesText(vote.ties.brokenBy)}.
      </p>
      {debate && (
        <>
          <h4>Revisions</h4>
          <Table
            label="revision decisions per model"
            head={['model', 'answers', 'revise', 'stand', 'merge', 'unparsed']}
          >
            {debate.revisions.map((r) => (
              <tr key={r.model}>
                <th scope="row">{r.model}</th>
                <td className="num">{count(r.revisions)}</td>
                <td>
                  <RateValue rate={r.revise} />
                </td>
                <td>
                  <RateValue rate={r.stand} />
                </td>
                <td>
                  <RateValue rate={r.merge} />
                </td>
                <td>
                  <RateValue rate={r.unparsed} />
                </td>
              </tr>
            ))}
          </Table>
          <p>
            The winning answer had been revised or merged by its author:{' '}
            <RateValue rate={debate.winnerWasRevised} />. The winner&apos;s own decision:{' '}
            {categoriesText(debate.winnerDecision.categories)}.
          </p>
          <p className="muted small">
            Debate votes once, on the revised answers: the winner the first answers would have had is not
            observed, so how often revision changed the winner is bounded by the share above.
          </p>
        </>
      )}
      <PositionBiasSection bias={vote.positionBias} />
      <ReferenceSection reference={vote.reference} />
    </section>
  );
}

const JURY_PARTS_TEXT =
  'Each part of an assessment is used where it was read: readable scores enter the score figures (means, α, leniency) even when the verdict could not be read, and a readable verdict enters the verdict figures (juror verdicts, Fleiss’ κ) even when a score could not be read. Parse failures count assessments with either part unread.';

/** ` [lower, upper]` after a coefficient, when it has an interval. */
function IntervalBracket({ interval }: { interval: ReportInterval | null | undefined }) {
  if (!interval) return null;
  return (
    <span
      className="interval"
      title={`${Math.round(interval.confidence * 100)}% interval, bootstrap over items`}
    >
      {' '}
      [{coef(interval.lower)}, {coef(interval.upper)}]
    </span>
  );
}

function JurySection({ jury }: { jury: ReportJury }) {
  const fleiss = jury.fleissKappa;
  // the scores given (1–10, halves where a juror gave them), in order
  const scoreValues = [
    ...new Set(jury.dimensions.flatMap((d) => d.distribution.categories.map((c) => c.category))),
  ].sort((a, b) => Number(a) - Number(b));
  return (
    <section aria-label="jury" className="report-mode">
      <h3>Jury</h3>
      <p>
        {count(jury.items)} complete items; {count(jury.assessments.n)} juror assessments, all five scores
        read in {count(jury.assessments.allScoresRead)}, some scores in{' '}
        {count(jury.assessments.someScoresRead)}, the verdict in {count(jury.assessments.verdictRead)}.
      </p>
      <p className="muted small">{JURY_PARTS_TEXT}</p>
      <div className="chart-pair">
        <DistributionChart distribution={jury.verdicts} title="Final verdicts (foreman, else majority)" />
        <DistributionChart distribution={jury.jurorVerdicts} title="Every juror's verdict" />
      </div>
      <section aria-label="agreement" className="report-part">
        <h4>Inter-rater agreement</h4>
        <dl className="facts">
          <dt>Fleiss&apos; κ on the jurors&apos; verdicts</dt>
          <dd>
            <span className="value">{coef(fleiss.value)}</span>
            <IntervalBracket interval={fleiss.interval} /> <Reading reading={fleiss.reading} />{' '}
            <span className="muted">
              (n {count(fleiss.n)} items
              {fleiss.ratersPerItem
                ? `, ${fleiss.ratersPerItem.min}–${fleiss.ratersPerItem.max} jurors each`
                : ''}
              ; observed {pct(fleiss.observedAgreement)}, by chance {pct(fleiss.expectedAgreement)})
            </span>
            {fleiss.note && <span className="note muted"> {fleiss.note}</span>}
          </dd>
          {jury.dimensions.map((d) => (
            <Fragment key={d.dimension}>
              <dt>Krippendorff&apos;s α, {d.dimension} (interval)</dt>
              <dd>
                <span className="value">{coef(d.alpha.value)}</span>
                <IntervalBracket interval={d.alpha.interval} /> <Reading reading={d.alpha.reading} />{' '}
                <span className="muted">
                  (n {count(d.alpha.n)} items, {count(d.alpha.pairableValues)} pairable scores)
                </span>
                {d.alpha.note && <span className="note muted"> {d.alpha.note}</span>}
              </dd>
            </Fragment>
          ))}
        </dl>
        <p className="muted small">
          κ: {KAPPA_TEXT} α: {ALPHA_TEXT}
        </p>
      </section>
      <IntervalChart
        title="Mean score per dimension (items' panel means)"
        rows={jury.dimensions.map((d) => rowOf(d.dimension, d.dimension, d.itemMean))}
        format={formatTick}
        min={0}
        max={10}
        caption="Scores from 1 to 10. Intervals: bootstrap over items."
      />
      <Table label="scores per dimension" head={['dimension', 'item mean', 'all scores', 'sd', 'range', 'α']}>
        {jury.dimensions.map((d) => (
          <tr key={d.dimension}>
            <th scope="row">{d.dimension}</th>
            <td>
              <FigureValue figure={d.itemMean} />
            </td>
            <td className="num">
              {num(d.scores.mean)} <span className="muted">(n {count(d.scores.n)})</span>
            </td>
            <td className="num">{num(d.scores.standardDeviation)}</td>
            <td className="num">
              {num(d.scores.min)}–{num(d.scores.max)}
            </td>
            <td>
              {coef(d.alpha.value)} <Reading reading={d.alpha.reading} />
            </td>
          </tr>
        ))}
      </Table>
      {scoreValues.length > 0 && (
        <Table label="score distribution per dimension" head={['dimension', ...scoreValues]}>
          {jury.dimensions.map((d) => (
            <tr key={d.dimension}>
              <th scope="row">{d.dimension}</th>
              {scoreValues.map((v) => (
                <td key={v} className="num">
                  {count(d.distribution.categories.find((c) => c.category === v)?.count ?? 0)}
                </td>
              ))}
            </tr>
          ))}
        </Table>
      )}
      <h4>Jurors</h4>
      <IntervalChart
        title="Leniency per juror: its mean score minus the panel's on the same items"
        rows={jury.jurors.map((j) => rowOf(j.juror, j.juror, j.leniency))}
        format={(v) => (Math.abs(v) < 1e-9 ? '0' : signed(v))}
        reference={{ value: 0, label: 'the panel' }}
        symmetric
        caption="Right of the line: more lenient than the panel; left: stricter."
      />
      <Table
        label="jurors"
        head={['juror', 'items', 'leniency', 'verdicts', 'parse failures', 'scores unread', 'verdict unread']}
      >
        {jury.jurors.map((j) => (
          <tr key={j.juror}>
            <th scope="row">{j.juror}</th>
            <td className="num">{count(j.items)}</td>
            <td>
              <FigureValue figure={j.leniency} format={signed} />
            </td>
            <td>{categoriesText(j.verdicts.categories)}</td>
            <td>
              <RateValue rate={j.parseFailures} />
            </td>
            <td>
              <RateValue rate={j.scoresUnread} />
            </td>
            <td>
              <RateValue rate={j.verdictUnread} />
            </td>
          </tr>
        ))}
      </Table>
      {jury.mostDisagreement.length > 0 && (
        <section aria-label="most disagreement" className="report-part">
          <h4>Items with the most disagreement</h4>
          <ol className="item-list">
            {jury.mostDisagreement.map((item) => (
              <li key={item.messageId}>
                <ItemLink item={item} />: {item.verdicts.APPROVE} approve, {item.verdicts.REVISE} revise,{' '}
                {item.verdicts.REJECT} reject ({pct(item.verdictSplit)} off the most common verdict); score
                spread {num(item.scoreSpread)}; final {item.finalVerdict ?? DASH}
              </li>
            ))}
          </ol>
        </section>
      )}
      <ReferenceSection reference={jury.reference} />
    </section>
  );
}

function DelphiSection({ delphi }: { delphi: ReportDelphi }) {
  return (
    <section aria-label="delphi" className="report-mode">
      <h3>Delphi</h3>
      <p>
        {count(delphi.items)} complete items ({count(delphi.numericItems)} numeric,{' '}
        {count(delphi.qualitativeItems)} qualitative). Converged: <RateValue rate={delphi.converged} />.
      </p>
      <div className="chart-pair">
        <DistributionChart
          distribution={delphi.roundsToConvergence.distribution}
          title={`Round of convergence (mean ${num(delphi.roundsToConvergence.mean)})`}
        />
        <DistributionChart distribution={delphi.rounds} title="Rounds run per item" />
      </div>
      <dl className="facts">
        <dt>Final coefficient of variation (numeric)</dt>
        <dd>
          {quantiles(delphi.finalCv, num)}, mean {num(delphi.finalCv.mean)}{' '}
          <span className="muted">(n {count(delphi.finalCv.n)})</span>
        </dd>
        <dt>Final agreement (qualitative)</dt>
        <dd>
          {quantiles(delphi.finalAgreement, pct)}, mean {pct(delphi.finalAgreement.mean)}{' '}
          <span className="muted">(n {count(delphi.finalAgreement.n)})</span>
        </dd>
      </dl>
      {delphi.movement.length > 0 && (
        <>
          <h4>Movement toward the median</h4>
          <IntervalChart
            title="Share of panelists who moved toward the previous round's median"
            rows={delphi.movement.map((m) => rowOf(String(m.round), `Round ${m.round}`, m.movedTowardMedian))}
            format={pct}
            min={0}
            max={1}
          />
          <Table
            label="movement per round"
            head={['round', 'panelists', 'toward', 'away', 'distance closed']}
          >
            {delphi.movement.map((m) => (
              <tr key={m.round}>
                <th scope="row">{m.round}</th>
                <td className="num">{count(m.n)}</td>
                <td>
                  <RateValue rate={m.movedTowardMedian} />
                </td>
                <td>
                  <RateValue rate={m.movedAway} />
                </td>
                <td>
                  <FigureValue figure={m.distanceClosed} format={pct} />
                </td>
              </tr>
            ))}
          </Table>
        </>
      )}
      <ReferenceSection reference={delphi.reference} />
    </section>
  );
}

// ---------------------------------------------------------------------------------------------
// Usage and failures

export function UsageFacts({ usage }: { usage: BatchUsageSummary }) {
  return (
    <dl className="facts">
      <dt>Tokens</dt>
      <dd>
        {count(usage.promptTokens)} prompt, {count(usage.completionTokens)} completion
      </dd>
      <dt>Cost</dt>
      <dd>
        {usd(usage.costUsd)} ({usd(usage.costPerItemUsd.mean)} per item on average;{' '}
        {quantiles(usage.costPerItemUsd, usd)})
      </dd>
      <dt>Item duration</dt>
      <dd>{quantiles(usage.itemDurationMs, ms)}</dd>
      <dt>Call latency</dt>
      <dd>{quantiles(usage.callLatencyMs, ms)}</dd>
    </dl>
  );
}

export function ModelUsageTable({
  models,
  label = 'models',
}: {
  models: ReportModelUsage[];
  label?: string;
}) {
  return (
    <Table
      label={label}
      head={['model', 'calls', 'failed', 'parse failures', 'tokens in / out', 'cost', 'latency p50', 'p95']}
    >
      {models.map((m) => (
        <tr key={m.model}>
          <th scope="row">{m.model}</th>
          <td className="num">{count(m.calls)}</td>
          <td>
            <RateValue rate={m.failedCalls} />
          </td>
          <td>
            <RateValue rate={m.parseFailures} />
          </td>
          <td className="num">
            {count(m.promptTokens)} / {count(m.completionTokens)}
          </td>
          <td className="num">{usd(m.costUsd)}</td>
          <td className="num">{ms(m.latencyMs.p50)}</td>
          <td className="num">{ms(m.latencyMs.p95)}</td>
        </tr>
      ))}
    </Table>
  );
}

function FailuresSection({ failures }: { failures: ReportFailures }) {
  return (
    <section aria-label="failures" className="report-part">
      <h3>Failures</h3>
      <p>
        Failed items: <RateValue rate={failures.failedItems} />; cancelled: {count(failures.cancelledItems)}.
      </p>
      {failures.groups.length > 0 && (
        <ul className="failure-groups">
          {failures.groups.map((g, i) => (
            <li key={i}>
              <p>
                <strong>{count(g.count)}</strong> {g.count === 1 ? 'item' : 'items'}:
              </p>
              <pre className="error-text">{g.error}</pre>
              <p className="examples">
                {g.examples.map((e, j) => (
                  <span key={e.messageId}>
                    {j > 0 && ', '}
                    <ItemLink item={e} />
                  </span>
                ))}
              </p>
            </li>
          ))}
        </ul>
      )}
      {failures.otherFailedItems > 0 && (
        <p className="muted">{count(failures.otherFailedItems)} more failed items with other errors.</p>
      )}
    </section>
  );
}

// ---------------------------------------------------------------------------------------------
// Headline numbers

export interface Headline {
  key: string;
  label: string;
  value: string;
  detail?: string;
}

export function headlines(report: BatchReport): Headline[] {
  const out: Headline[] = [
    {
      key: 'items',
      label: 'items complete',
      value: `${count(report.items.complete)} / ${count(report.items.total)}`,
      detail: `${count(report.items.failed)} failed, ${count(report.items.cancelled)} cancelled`,
    },
    {
      key: 'cost',
      label: 'cost',
      value: usd(report.usage.costUsd),
      detail: `${usd(report.usage.costPerItemUsd.mean)} per item`,
    },
  ];
  const top = report.council?.models[0];
  if (top)
    out.push({
      key: 'council',
      label: 'council: best average rank',
      value: top.model,
      detail: `rank ${num(top.averageRank.value)}`,
    });
  for (const [name, contest] of [
    ['vote', report.vote],
    ['debate', report.debate],
  ] as const) {
    const best = contest?.models[0];
    if (best)
      out.push({
        key: name,
        label: `${name}: most wins`,
        value: best.model,
        detail: `win rate ${pct(best.winRate.value)}`,
      });
  }
  if (report.jury) {
    const first = [...report.jury.verdicts.categories].sort((a, b) => b.count - a.count)[0];
    if (first)
      out.push({
        key: 'verdict',
        label: 'jury: most common verdict',
        value: first.category,
        detail: pct(first.share),
      });
    out.push({
      key: 'kappa',
      label: "jury: Fleiss' κ",
      value: coef(report.jury.fleissKappa.value),
      detail: report.jury.fleissKappa.reading ?? report.jury.fleissKappa.note ?? undefined,
    });
  }
  if (report.delphi)
    out.push({
      key: 'converged',
      label: 'Delphi: converged',
      value: pct(report.delphi.converged.value),
      detail: `mean round ${num(report.delphi.roundsToConvergence.mean)}`,
    });
  return out;
}

export function Headlines({ items }: { items: Headline[] }) {
  return (
    <ul className="kpis" aria-label="headline numbers">
      {items.map((h) => (
        <li key={h.key} className="kpi" data-key={h.key}>
          <span className="kpi-label">{h.label}</span>
          <span className="kpi-value">{h.value}</span>
          {h.detail && <span className="kpi-detail">{h.detail}</span>}
        </li>
      ))}
    </ul>
  );
}

// ---------------------------------------------------------------------------------------------
// Markdown: copy and download

/** A text resource of the API (the Markdown of a report), with the user's key. */
export async function fetchText(path: string): Promise<string> {
  const headers: Record<string, string> = { accept: 'text/markdown, text/plain, */*' };
  const key = apiKey.get();
  if (key) headers.authorization = `Bearer ${key}`;
  const response = await fetch(path, { headers });
  const text = await response.text();
  if (!response.ok) {
    let message = text.slice(0, 300);
    try {
      message = (JSON.parse(text) as { message?: string }).message ?? message;
    } catch {
      // not JSON: the text itself
    }
    throw new ApiFailure(response.status, { statusCode: response.status, error: 'Error', message });
  }
  return text;
}

/** Buttons that copy the Markdown at `path` to the clipboard or save it as `filename`. */
export function MarkdownActions({ path, filename }: { path: string; filename: string }) {
  const [status, setStatus] = useState('');
  const [fallback, setFallback] = useState<string | null>(null);
  const load = () => fetchText(path);
  const fail = (e: unknown) =>
    setStatus(`Could not read the Markdown: ${e instanceof Error ? e.message : String(e)}`);
  const copy = async () => {
    setStatus('');
    const text = await load();
    try {
      if (!navigator.clipboard) throw new Error('no clipboard');
      await navigator.clipboard.writeText(text);
      setFallback(null);
      setStatus('Markdown copied.');
    } catch {
      // no clipboard (an insecure page, a refusal): show it to copy by hand
      setFallback(text);
      setStatus('The clipboard is not available here: select the Markdown below and copy it.');
    }
  };
  const download = async () => {
    setStatus('');
    const text = await load();
    const url = URL.createObjectURL(new Blob([text], { type: 'text/markdown;charset=utf-8' }));
    const link = document.createElement('a');
    link.href = url;
    link.download = filename;
    document.body.append(link);
    link.click();
    link.remove();
    setTimeout(() => URL.revokeObjectURL(url), 1000);
    setStatus(`Saved as ${filename}.`);
  };
  return (
    <div className="markdown-actions">
      <button type="button" className="secondary" onClick={() => void copy().catch(fail)}>
        Copy Markdown
      </button>
      <button type="button" className="secondary" onClick={() => void download().catch(fail)}>
        Download Markdown
      </button>
      <span role="status" className="muted">
        {status}
      </span>
      {fallback !== null && (
        <textarea
          className="md-text"
          aria-label="the report as Markdown"
          readOnly
          value={fallback}
          onFocus={(e) => e.currentTarget.select()}
        />
      )}
    </div>
  );
}

// ---------------------------------------------------------------------------------------------
// Styles of the report and compare pages

export const REPORT_CSS = `
.report .report-head {
  display: flex;
  flex-wrap: wrap;
  align-items: baseline;
  gap: 0.3rem 0.8rem;
}
.report .report-head h2 {
  margin: 0;
  overflow-wrap: anywhere;
}
.report .report-actions,
.report .markdown-actions,
.compare-picker {
  display: flex;
  flex-wrap: wrap;
  align-items: flex-end;
  gap: 0.5rem 0.8rem;
  margin: 0.6rem 0;
}
.report .markdown-actions [role='status'] {
  align-self: center;
}
.report .md-text {
  width: 100%;
  min-height: 12rem;
  font-family: ui-monospace, monospace;
  font-size: 0.85rem;
}
.report .kpis {
  list-style: none;
  padding: 0;
  margin: 0.8rem 0;
  display: grid;
  grid-template-columns: repeat(auto-fill, minmax(min(170px, 100%), 1fr));
  gap: 0.6rem;
}
.report .kpi {
  display: grid;
  gap: 0.1rem;
  background: var(--surface-2);
  color: var(--ink);
  border-radius: 6px;
  padding: 0.5rem 0.7rem;
  min-width: 0;
}
.report .kpi-label,
.report .kpi-detail {
  font-size: 0.85rem;
  color: var(--ink);
}
.report .kpi-value {
  font-size: 1.25rem;
  font-weight: 700;
  font-variant-numeric: tabular-nums;
  overflow-wrap: anywhere;
}
.report .banner {
  background: var(--warn-bg);
  color: var(--ink);
}
.report h4 {
  margin: 1rem 0 0.4rem;
}
.report .small {
  font-size: 0.85rem;
}
.report td.num,
.report th.num {
  text-align: right;
  font-variant-numeric: tabular-nums;
}
.report td.diagonal {
  font-weight: 700;
}
.report td,
.report th {
  vertical-align: top;
}
.report tbody th {
  font-weight: 600;
  overflow-wrap: break-word;
}
.report .figure-value .ci,
.report .figure-value .value,
.report .nowrap {
  white-space: nowrap;
}
.report .figure-value .ci {
  color: var(--ink);
}
.report .facts {
  display: grid;
  grid-template-columns: minmax(0, max-content) minmax(0, 1fr);
  gap: 0.3rem 1rem;
  margin: 0.5rem 0;
}
.report .facts dt {
  color: var(--muted);
}
.report .facts dd {
  margin: 0;
  min-width: 0;
}
@media (max-width: 560px) {
  .report .facts {
    grid-template-columns: minmax(0, 1fr);
    gap: 0.1rem;
  }
  .report .facts dd {
    margin-bottom: 0.4rem;
  }
}
.report .chart-pair {
  display: grid;
  grid-template-columns: repeat(auto-fit, minmax(min(280px, 100%), 1fr));
  gap: 0 1.5rem;
}
.report .interval-figure {
  margin: 0.8rem 0 1.2rem;
}
.report .chart-title {
  font-weight: 600;
  font-size: 0.9rem;
  margin-bottom: 0.3rem;
}
.svg-chart.interval-chart {
  max-width: 440px;
}
/* Text over a gridline or the dashed line stays readable: a halo of the background around it. */
.svg-chart.interval-chart text {
  paint-order: stroke;
  stroke: var(--surface);
  stroke-width: 3px;
  stroke-linejoin: round;
}
.svg-chart.interval-chart .row-label {
  fill: var(--ink);
}
.svg-chart.interval-chart .row-value {
  fill: var(--ink);
  font-variant-numeric: tabular-nums;
}
.svg-chart.interval-chart .whisker-line {
  fill: none;
  stroke: var(--ink);
  stroke-width: 1.6;
}
.svg-chart.interval-chart .point {
  fill: var(--view-series-0);
  stroke: var(--ink);
  stroke-width: 1;
}
.svg-chart.interval-chart .reference-line {
  stroke: var(--ink);
  stroke-width: 1.2;
  stroke-dasharray: 4 3;
}
.report .badge.reading-ok {
  background: var(--ok-bg);
  color: var(--ink);
}
.report .badge.reading-warn {
  background: var(--warn-bg);
  color: var(--ink);
}
.report .badge.reading-bad {
  background: var(--bad-bg);
  color: var(--ink);
}
.report .item-list {
  padding-left: 1.4rem;
}
.report .item-list li {
  margin: 0.25rem 0;
}
.report .item-key {
  overflow-wrap: anywhere;
}
.report .failure-groups {
  list-style: none;
  padding: 0;
}
.report .failure-groups li {
  border-left: 3px solid var(--bad);
  padding-left: 0.7rem;
  margin: 0.6rem 0;
}
.report .failure-groups p {
  margin: 0.2rem 0;
}
.report .error-text {
  white-space: pre-wrap;
  overflow-wrap: anywhere;
  font-size: 0.85rem;
  margin: 0.2rem 0;
}
.report .side-by-side {
  display: grid;
  grid-template-columns: repeat(auto-fit, minmax(min(260px, 100%), 1fr));
  gap: 0.8rem;
}
.report .side-by-side > .card {
  margin: 0;
}
.report .flip-arrow {
  white-space: nowrap;
}
`;

export function ReportStyles() {
  return (
    <>
      <ViewStyles />
      <style href="conclave-report" precedence="default">
        {REPORT_CSS}
      </style>
    </>
  );
}

// ---------------------------------------------------------------------------------------------
// The page

type Load<T> =
  { state: 'loading' } | { state: 'failed'; status: number; message: string } | { state: 'ready'; data: T };

/** GETs `path` (JSON) when it changes and on `reload`; keeps the last answer while it reloads. */
export function useLoad<T>(path: string | null): [Load<T>, () => void] {
  const [result, setResult] = useState<{ path: string; load: Load<T> } | null>(null);
  const [round, setRound] = useState(0);
  useEffect(() => {
    if (path === null) return;
    let live = true;
    api<T>('GET', path).then(
      (data) => live && setResult({ path, load: { state: 'ready', data } }),
      (e: unknown) =>
        live &&
        setResult({
          path,
          load: {
            state: 'failed',
            status: e instanceof ApiFailure ? e.status : 0,
            message: e instanceof ApiFailure ? (e.body?.message ?? e.message) : String(e),
          },
        }),
    );
    return () => {
      live = false;
    };
  }, [path, round]);
  const reload = useCallback(() => setRound((r) => r + 1), []);
  return [result && result.path === path ? result.load : { state: 'loading' }, reload];
}

export function LoadFailed({ what, status, message }: { what: string; status: number; message: string }) {
  return (
    <div className="not-found load-failed" role="alert" data-testid="report-failed">
      <h3>{status === 404 ? `${what} not found` : `The ${what.toLowerCase()} could not be read`}</h3>
      <p>{message}</p>
    </div>
  );
}

/** Points from a proportion difference (`+8.3 pts`). */
const points = (value: number | null | undefined): string =>
  value === null || value === undefined
    ? DASH
    : `${value > 0 ? '+' : value < 0 ? '−' : ''}${Math.abs(value * 100).toFixed(1)} pts`;

function gainTestText(test: GainTest): string {
  if (!test.run) return `not run (${test.reason ?? 'no test'})`;
  const p = test.pValue === null ? DASH : test.pValue < 0.001 ? '< 0.001' : test.pValue.toFixed(3);
  const holm = test.holmAdjustedPValue === null ? '' : `, Holm ${test.holmAdjustedPValue.toFixed(3)}`;
  return `p = ${p}${holm}`;
}

/** Graded batches (issue 37): does the panel beat its best member, and a plain majority? */
function PanelGainPart({ gain }: { gain: ReportPanelGain }) {
  const answers: [string, GradedAccuracy][] = [
    ...gain.members.map((m): [string, GradedAccuracy] => [
      `Seat ${m.seat}: ${m.model}${gain.best?.seat === m.seat ? ' (best)' : ''}`,
      m.accuracy,
    ]),
    ...(gain.heldOutBest
      ? [
          [
            gain.heldOutBest.pickedOnOdd === gain.heldOutBest.pickedOnEven
              ? `Best member picked on the other half (seat ${gain.heldOutBest.pickedOnOdd} both times)`
              : `Best member picked on the other half (seats ${gain.heldOutBest.pickedOnEven} and ${gain.heldOutBest.pickedOnOdd})`,
            gain.heldOutBest.accuracy,
          ] as [string, GradedAccuracy],
        ]
      : []),
    ['Majority of the members’ own answers', gain.majority.accuracy],
    ['Panel (final answer)', gain.panel],
  ];
  const differences = [
    gain.panelMinusBest,
    gain.heldOutBest?.panelMinus ?? null,
    gain.panelMinusMajority,
  ].filter((d): d is PairedAccuracyDifference => d !== null);
  return (
    <section aria-label={`panel gain ${gain.mode}`} className="report-mode">
      <h3>Panel gain: {gain.mode}</h3>
      {gain.sentences.map((sentence, i) => (
        <p key={i}>{sentence}</p>
      ))}
      {gain.reason === null && (
        <>
          <Table
            label={`panel gain ${gain.mode} accuracy`}
            head={['answer', 'accuracy', 'unreadable', 'missing']}
          >
            {answers.map(([label, a], i) => (
              <tr key={i}>
                <th scope="row">{label}</th>
                <td>
                  <RateValue rate={a} />
                </td>
                <td className="num">{count(a.unreadable)}</td>
                <td className="num">{count(a.missing)}</td>
              </tr>
            ))}
          </Table>
          <Table
            label={`panel gain ${gain.mode} differences`}
            head={['comparison', 'difference', 'only panel right', 'only other right', 'exact test']}
          >
            {differences.map((d, i) => (
              <tr key={i}>
                <th scope="row">Panel − {d.b.replace(/^its |^a /, '')}</th>
                <td>
                  <FigureValue figure={d.difference} format={points} />
                </td>
                <td className="num">{count(d.onlyA)}</td>
                <td className="num">{count(d.onlyB)}</td>
                <td>{gainTestText(d.test)}</td>
              </tr>
            ))}
          </Table>
          {gain.revision && (
            <p>
              Revisions: before <RateValue rate={gain.revision.before} />, after{' '}
              <RateValue rate={gain.revision.after} />; {count(gain.revision.fixed)} fixed a wrong answer,{' '}
              {count(gain.revision.broke)} broke a right one.
            </p>
          )}
          {gain.delphi && (
            <p>
              First-round median error <FigureValue figure={gain.delphi.firstMedianError} />, final error{' '}
              <FigureValue figure={gain.delphi.finalError} /> over {count(gain.delphi.items)} items (
              {count(gain.delphi.closer)} closer, {count(gain.delphi.further)} further).
            </p>
          )}
          <p>
            Per correct answer of the panel: cost{' '}
            <FigureValue figure={gain.perCorrect.costUsd.value} format={usd} />, tokens{' '}
            <FigureValue figure={gain.perCorrect.tokens.value} />, latency{' '}
            <FigureValue figure={gain.perCorrect.latencyMs.value} format={ms} />.
          </p>
        </>
      )}
      {gain.notes.length > 0 && (
        <ul className="notes" aria-label={`panel gain ${gain.mode} notes`}>
          {gain.notes.map((n, i) => (
            <li key={i}>{n}</li>
          ))}
        </ul>
      )}
    </section>
  );
}

export function ReportView({ report, onRefresh }: { report: BatchReport; onRefresh?: () => void }) {
  const base = `/api/batches/${encodeURIComponent(report.batchId)}/report`;
  return (
    <div className="result report" data-batch-id={report.batchId}>
      <ReportStyles />
      <div className="report-head">
        <h2>Report: {report.name ?? `Batch ${report.batchId.slice(0, 8)}`}</h2>
        <span className={`badge status status-${report.status}`}>{report.status}</span>
        <span className="muted">{report.modes.join(', ')}</span>
      </div>
      <p className="report-actions">
        <a href={`#/batches/${encodeURIComponent(report.batchId)}`}>Back to the batch</a>
        {onRefresh && (
          <button type="button" className="secondary" onClick={onRefresh}>
            Refresh
          </button>
        )}
      </p>
      <MarkdownActions path={`${base}?format=md`} filename={`report-${report.batchId}.md`} />
      <ComparePicker batchId={report.batchId} />
      {report.partial && (
        <p className="banner" role="note">
          Partial report: {count(report.items.unfinished)} items are still queued or running; it covers the{' '}
          {count(report.items.complete + report.items.failed + report.items.cancelled)} finished ones.
        </p>
      )}
      <Headlines items={headlines(report)} />
      {report.notes.length > 0 && (
        <ul className="notes" aria-label="notes">
          {report.notes.map((n, i) => (
            <li key={i}>{n}</li>
          ))}
        </ul>
      )}
      {report.council && <CouncilSection council={report.council} />}
      {report.vote && <ContestSection name="vote" vote={report.vote} />}
      {report.debate && <ContestSection name="debate" vote={report.debate} />}
      {report.jury && <JurySection jury={report.jury} />}
      {report.delphi && <DelphiSection delphi={report.delphi} />}
      {(report.panelGain ?? []).map((gain) => (
        <PanelGainPart key={gain.mode} gain={gain} />
      ))}
      <section aria-label="models" className="report-part">
        <h3>Models</h3>
        <UsageFacts usage={report.usage} />
        <ModelUsageTable models={report.models} />
      </section>
      <FailuresSection failures={report.failures} />
      <MethodsSection methods={report.method.methods} />
      <p className="muted small">
        Generated {new Date(report.generatedAt).toLocaleString()} from {count(report.usage.items)} finished
        items. Intervals are {Math.round(report.method.confidence * 100)}%: Wilson score for rates with one
        case per item, item-cluster bootstrap for shares pooling several votes, answers or calls per item,
        {` percentile bootstrap over items (${count(report.method.resamples)} resamples, seed ${report.method.seed})`}{' '}
        for means, the asymptotic standard error for Cohen&apos;s κ.
      </p>
    </div>
  );
}

export function ReportPage({ batchId }: { batchId: string }) {
  const [load, reload] = useLoad<BatchReport>(`/api/batches/${encodeURIComponent(batchId)}/report`);
  if (load.state === 'loading')
    return (
      <p className="loading muted" role="status">
        Computing the report…
      </p>
    );
  if (load.state === 'failed') return <LoadFailed what="Batch" status={load.status} message={load.message} />;
  return <ReportView report={load.data} onRefresh={reload} />;
}

export default ReportPage;
