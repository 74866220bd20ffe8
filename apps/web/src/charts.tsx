/**
 * Small charts, no chart library. Bars and scales are HTML (their labels wrap, sit on their own
 * line and never overlap a bar; they fit any width); the radar and the Delphi convergence chart
 * are SVG drawn in a viewBox, scaled to their container. Each is an image with a label that says
 * what it shows, and each has a legend where a colour or a mark needs one.
 */
import type { ReactNode } from 'react';

/** Round numbers (1, 2 or 5 × 10^k apart) from at most `min` to at least `max`, about `count` of them. */
export function niceTicks(min: number, max: number, count = 5, integer = false): number[] {
  if (!Number.isFinite(min) || !Number.isFinite(max)) return [0, 1];
  if (max < min) [min, max] = [max, min];
  if (max === min) {
    const pad = Math.abs(max) > 0 ? Math.abs(max) * 0.1 : 1;
    min -= pad;
    max += pad;
  }
  const raw = (max - min) / Math.max(count - 1, 1);
  const power = 10 ** Math.floor(Math.log10(raw));
  const multiples = integer && power < 10 ? [1, 2, 5, 10] : [1, 2, 2.5, 5, 10];
  let step = multiples.map((m) => m * power).find((s) => s >= raw * (1 - 1e-9)) ?? 10 * power;
  if (integer) step = Math.max(1, Math.round(step));
  const round = (v: number) => Number(v.toPrecision(12));
  const first = Math.floor(min / step + 1e-9) * step;
  const last = Math.ceil(max / step - 1e-9) * step;
  const ticks: number[] = [];
  for (let k = 0; first + k * step <= last + step * 1e-9; k++) ticks.push(round(first + k * step));
  if (ticks.length < 2) ticks.push(round(first + step));
  return ticks;
}

const compact = new Intl.NumberFormat('en-US', { notation: 'compact', maximumFractionDigits: 1 });
const plain = new Intl.NumberFormat('en-US', { maximumFractionDigits: 2 });

/** A number for an axis: short (`12K`, `3.4M`, `0.25`). */
export const formatTick = (value: number): string =>
  Math.abs(value) >= 10_000 ? compact.format(value) : plain.format(value);

/** A number for reading: grouped, at most two decimals (`24,391.25`). */
export const formatNumber = (value: number): string => plain.format(value);

const whole = new Intl.NumberFormat('en-US', { maximumFractionDigits: 0 });
const tenths = new Intl.NumberFormat('en-US', { maximumFractionDigits: 1 });

/** A statistic for reading: as many decimals as its size calls for (`12,228,571`, `41.3`, `0.83`). */
export const formatStat = (value: number): string =>
  Math.abs(value) >= 1000
    ? whole.format(value)
    : Math.abs(value) >= 10
      ? tenths.format(value)
      : plain.format(value);

/** Where `value` sits on a scale from `min` to `max`, in percent. */
const percent = (value: number, min: number, max: number) =>
  max === min ? 50 : Math.min(100, Math.max(0, ((value - min) / (max - min)) * 100));

/** Tick labels under a scale (HTML), aligned with the bars above them. */
function Axis({
  ticks,
  min,
  max,
  format,
}: {
  ticks: number[];
  min: number;
  max: number;
  format: (v: number) => string;
}) {
  return (
    <div className="axis" aria-hidden="true">
      {ticks.map((t, i) => (
        <span
          key={t}
          className={i === 0 ? 'tick first' : i === ticks.length - 1 ? 'tick last' : 'tick'}
          style={{ left: `${percent(t, min, max)}%` }}
        >
          {format(t)}
        </span>
      ))}
    </div>
  );
}

export interface LegendItem {
  key: string;
  label: ReactNode;
  /** The swatch's classes: `series-2`, `dot series-0`, `line`, `dashed`, `band`, `ring`, `whisker`, `bar`. */
  swatch: string;
}

export function Legend({ items, label = 'legend' }: { items: LegendItem[]; label?: string }) {
  return (
    <ul className="legend" aria-label={label}>
      {items.map((item) => (
        <li key={item.key}>
          <span className={`swatch ${item.swatch}`} aria-hidden="true" />
          <span>{item.label}</span>
        </li>
      ))}
    </ul>
  );
}

export interface Bar {
  key: string;
  /** What the row shows above its bar (a name chip, a word). */
  label: ReactNode;
  /** The same as plain text, for the chart's accessible label. */
  text: string;
  value: number;
  highlight?: boolean;
  tone?: 'ok' | 'warn' | 'bad';
}

/** Horizontal bars with a value axis: each label on its own line above its bar. */
export function BarChart({
  bars,
  title,
  max,
  axisTitle,
}: {
  bars: Bar[];
  title: string;
  max?: number;
  axisTitle?: string;
}) {
  const ticks = niceTicks(0, Math.max(max ?? 0, ...bars.map((b) => b.value), 1), 5, true);
  const top = ticks[ticks.length - 1];
  return (
    <div className="figure">
      <div
        className="hbars"
        role="img"
        aria-label={`${title}: ${bars.map((b) => `${b.text} ${b.value}`).join(', ')}`}
      >
        {bars.map((b) => (
          <div key={b.key} className="hbar-row" data-key={b.key}>
            <div className="hbar-label">{b.label}</div>
            <div className="hbar-track">
              <span
                className={[
                  'hbar',
                  b.highlight ? 'win' : '',
                  b.tone ? `tone-${b.tone}` : '',
                  b.value === 0 ? 'zero' : '',
                ]
                  .filter(Boolean)
                  .join(' ')}
                style={{ width: `${percent(b.value, 0, top)}%` }}
              />
            </div>
            <span className="hbar-value">{b.value}</span>
          </div>
        ))}
        <div className="hbar-row">
          <Axis ticks={ticks} min={0} max={top} format={String} />
          <span />
        </div>
        {axisTitle && <div className="axis-title">{axisTitle}</div>}
      </div>
    </div>
  );
}

const ordinal = (n: number) => {
  const s = ['th', 'st', 'nd', 'rd'];
  const v = n % 100;
  return `${n}${s[(v - 20) % 10] ?? s[v] ?? s[0]}`;
};

export interface RankRow {
  key: string;
  label: ReactNode;
  text: string;
  average: number;
  /** The rank each evaluator gave it. */
  ranks: number[];
}

/** Average ranks on a 1st…Nth scale (a dot each), with every evaluator's rank as a ring. */
export function RankChart({ rows, count, title }: { rows: RankRow[]; count: number; title: string }) {
  const last = Math.max(count, 2);
  const ticks = Array.from({ length: last }, (_, i) => i + 1);
  const at = (rank: number) => `calc(0.6rem + (100% - 1.2rem) * ${percent(rank, 1, last) / 100})`;
  return (
    <div className="figure rank-chart">
      <div
        className="scale-rows"
        role="img"
        aria-label={`${title}: ${rows.map((r) => `${r.text} ${r.average.toFixed(2)}`).join(', ')}`}
      >
        {rows.map((r) => {
          const seen = new Map<number, number>();
          return (
            <div key={r.key} className="scale-row" data-key={r.key}>
              <div className="scale-label">
                <span>{r.label}</span>
                <span className="value">{r.average.toFixed(2)}</span>
              </div>
              <div className="scale-track">
                {r.ranks.map((rank, i) => {
                  const n = seen.get(rank) ?? 0;
                  seen.set(rank, n + 1);
                  return (
                    <span
                      key={i}
                      className="mark"
                      style={{ left: at(rank), marginTop: `${(n % 3) * 3 - 3}px` }}
                    />
                  );
                })}
                <span className="dot" style={{ left: at(r.average) }} />
              </div>
            </div>
          );
        })}
        <div className="scale-row">
          <div className="axis" aria-hidden="true" style={{ marginInline: '0.6rem' }}>
            {ticks.map((t, i) => (
              <span
                key={t}
                className={i === 0 ? 'tick first' : i === ticks.length - 1 ? 'tick last' : 'tick'}
                style={{ left: `${percent(t, 1, last)}%` }}
              >
                {ordinal(t)}
              </span>
            ))}
          </div>
        </div>
      </div>
      <Legend
        items={[
          { key: 'avg', swatch: 'dot series-0', label: 'average rank' },
          { key: 'one', swatch: 'ring', label: "one evaluator's rank" },
        ]}
      />
      <figcaption>Further left is better: 1st is the best rank.</figcaption>
    </div>
  );
}

export interface RangeRow {
  key: string;
  label: string;
  average: number | null;
  low: number | null;
  high: number | null;
}

/** An average as a bar and the lowest–highest range as a whisker, on a min–max scale. */
export function RangeChart({
  rows,
  min = 0,
  max = 10,
  title,
}: {
  rows: RangeRow[];
  min?: number;
  max?: number;
  title: string;
}) {
  const ticks = niceTicks(min, max, 6);
  const describe = (r: RangeRow) =>
    r.average === null ? 'not scored' : `${r.average}${r.low !== null ? ` (${r.low}–${r.high})` : ''}`;
  return (
    <div className="figure range-chart">
      <div
        className="scale-rows"
        role="img"
        aria-label={`${title}: ${rows.map((r) => `${r.label} ${describe(r)}`).join(', ')}`}
      >
        {rows.map((r) => (
          <div key={r.key} className="scale-row" data-key={r.key}>
            <div className="scale-label">
              <span>{r.label}</span>
              <span className="value">{describe(r)}</span>
            </div>
            <div className="scale-track">
              {r.average !== null && (
                <span className="avg-bar" style={{ width: `${percent(r.average, min, max)}%` }} />
              )}
              {r.low !== null && r.high !== null && (
                <span
                  className="whisker"
                  style={{
                    left: `${percent(r.low, min, max)}%`,
                    width: `${percent(r.high, min, max) - percent(r.low, min, max)}%`,
                  }}
                />
              )}
            </div>
          </div>
        ))}
        <div className="scale-row">
          <Axis ticks={ticks} min={min} max={max} format={String} />
        </div>
      </div>
      <Legend
        items={[
          { key: 'avg', swatch: 'bar', label: 'average score' },
          { key: 'range', swatch: 'whisker', label: 'lowest to highest juror' },
        ]}
      />
    </div>
  );
}

/** Five (or any number of) scores from 0 to 10 on spokes, with the 5 and 10 rings labelled. */
export function Radar({
  scores,
  labels,
  title,
}: {
  scores: (number | null)[];
  labels: string[];
  title?: string;
}) {
  const cx = 175;
  const cy = 96;
  const r = 62;
  const angle = (i: number) => (Math.PI * 2 * i) / labels.length - Math.PI / 2;
  const point = (i: number, value: number) => [
    cx + Math.cos(angle(i)) * r * (value / 10),
    cy + Math.sin(angle(i)) * r * (value / 10),
  ];
  const shape = scores.map((s, i) => point(i, s ?? 0).join(',')).join(' ');
  const described = labels.map((l, i) => `${l} ${scores[i] ?? 'not scored'}`).join(', ');
  return (
    <svg
      className="svg-chart radar"
      viewBox="0 0 350 192"
      role="img"
      aria-label={`${title ?? 'Scores out of 10'}: ${described}`}
    >
      {[2, 4, 6, 8, 10].map((ring) => (
        <polygon
          key={ring}
          className="radar-ring"
          points={labels.map((_, i) => point(i, ring).join(',')).join(' ')}
        />
      ))}
      {labels.map((_, i) => {
        const [x, y] = point(i, 10);
        return <line key={i} className="radar-spoke" x1={cx} y1={cy} x2={x} y2={y} />;
      })}
      {[5, 10].map((ring) => (
        <text key={ring} className="tick-label ring-label" x={cx + 4} y={cy - (r * ring) / 10 + 11}>
          {ring}
        </text>
      ))}
      <polygon className="radar-shape" points={shape} />
      {scores.map((s, i) => {
        const [x, y] = point(i, s ?? 0);
        return <circle key={i} className="radar-point" cx={x} cy={y} r="3" />;
      })}
      {labels.map((label, i) => {
        const [x, y] = point(i, 11.3);
        const cos = Math.cos(angle(i));
        const anchor = cos > 0.3 ? 'start' : cos < -0.3 ? 'end' : 'middle';
        return (
          <text key={label} x={x} y={y + 4} textAnchor={anchor} className="chart-label">
            {label} {scores[i] ?? '–'}
          </text>
        );
      })}
    </svg>
  );
}

export interface ConvergenceRound {
  round: number;
  mean: number;
  sd: number;
  estimates: { key: string; name: string; value: number; series: number }[];
}

/**
 * Every panelist's estimate per round (a point each, a line through each panelist's rounds), the
 * mean (a line), ±1 standard deviation (a band) and, with a threshold, the convergence zone: the
 * mean ± threshold × |mean| (dashed) — the panel has converged when the band fits inside it.
 * One round is drawn as well as five.
 */
export function ConvergenceChart({
  rounds,
  threshold,
  title,
}: {
  rounds: ConvergenceRound[];
  threshold: number | null;
  title: string;
}) {
  const W = 360;
  const H = 220;
  const left = 50;
  const right = 12;
  const top = 12;
  const bottom = 30;
  const plotW = W - left - right;
  const plotH = H - top - bottom;
  const zone = (r: ConvergenceRound) =>
    threshold === null
      ? null
      : [r.mean - threshold * Math.abs(r.mean), r.mean + threshold * Math.abs(r.mean)];
  const values = rounds.flatMap((r) => [
    ...r.estimates.map((e) => e.value),
    r.mean - r.sd,
    r.mean + r.sd,
    ...(zone(r) ?? []),
  ]);
  const ticks = niceTicks(Math.min(...values), Math.max(...values), 5);
  const lo = ticks[0];
  const hi = ticks[ticks.length - 1];
  const y = (v: number) => top + plotH - ((v - lo) / (hi - lo || 1)) * plotH;
  const col = plotW / Math.max(rounds.length, 1);
  const cx = (i: number) => left + col * (i + 0.5);
  const bandW = Math.min(col * 0.5, 64);
  const zoneW = Math.min(col * 0.8, 96);
  const keys = [...new Set(rounds.flatMap((r) => r.estimates.map((e) => e.key)))];
  const jitter = (key: string) =>
    (keys.indexOf(key) - (keys.length - 1) / 2) * Math.min(5, bandW / keys.length);
  const described = rounds
    .map(
      (r) =>
        `round ${r.round}: mean ${formatStat(r.mean)}, standard deviation ${formatStat(r.sd)}, ` +
        r.estimates.map((e) => `${e.name} ${formatStat(e.value)}`).join(', '),
    )
    .join('; ');
  return (
    <svg
      className="svg-chart convergence"
      viewBox={`0 0 ${W} ${H}`}
      role="img"
      aria-label={`${title}. ${described}${threshold === null ? '' : `. Converged when the standard deviation is under ${threshold * 100}% of the mean`}`}
    >
      {ticks.map((t) => (
        <g key={t} className="y-tick">
          <line className="gridline" x1={left} x2={W - right} y1={y(t)} y2={y(t)} />
          <text className="tick-label" x={left - 6} y={y(t) + 4} textAnchor="end">
            {formatTick(t)}
          </text>
        </g>
      ))}
      <line className="axis-line y-axis" x1={left} x2={left} y1={top} y2={top + plotH} />
      <line className="axis-line x-axis" x1={left} x2={W - right} y1={top + plotH} y2={top + plotH} />
      {rounds.map((r, i) => {
        const z = zone(r);
        return (
          <g key={r.round} className="round" data-round={r.round}>
            <rect
              className="band"
              x={cx(i) - bandW / 2}
              width={bandW}
              y={y(r.mean + r.sd)}
              height={Math.max(y(r.mean - r.sd) - y(r.mean + r.sd), 1)}
            />
            {z && (
              <path
                className="threshold"
                d={`M${cx(i) - zoneW / 2},${y(z[1])}H${cx(i) + zoneW / 2}M${cx(i) - zoneW / 2},${y(z[0])}H${cx(i) + zoneW / 2}`}
              />
            )}
            <line
              className="mean-mark"
              x1={cx(i) - bandW / 2}
              x2={cx(i) + bandW / 2}
              y1={y(r.mean)}
              y2={y(r.mean)}
            />
            <text className="tick-label x-label" x={cx(i)} y={H - 10} textAnchor="middle">
              Round {r.round}
            </text>
          </g>
        );
      })}
      {rounds.length > 1 && (
        <polyline className="mean-line" points={rounds.map((r, i) => `${cx(i)},${y(r.mean)}`).join(' ')} />
      )}
      {rounds.length > 1 &&
        keys.map((key) => {
          const path = rounds.flatMap((r, i) => {
            const e = r.estimates.find((x) => x.key === key);
            return e ? [`${cx(i) + jitter(key)},${y(e.value)}`] : [];
          });
          const series = rounds.flatMap((r) => r.estimates).find((e) => e.key === key)?.series ?? 0;
          return path.length > 1 ? (
            <polyline key={key} className={`trajectory series-${series % 7}`} points={path.join(' ')} />
          ) : null;
        })}
      {rounds.map((r, i) =>
        r.estimates.map((e) => (
          <circle
            key={`${r.round}-${e.key}`}
            className={`estimate series-${e.series % 7}`}
            data-key={e.key}
            cx={cx(i) + jitter(e.key)}
            cy={y(e.value)}
            r="4.5"
          >
            <title>{`${e.name}, round ${r.round}: ${formatStat(e.value)}`}</title>
          </circle>
        )),
      )}
    </svg>
  );
}

export interface StackedRound {
  round: number;
  parts: { answer: string; count: number; percentage: number }[];
  agreement: number;
}

/**
 * Each round's answers as one bar split by answer (largest first, one colour per answer in every
 * round), with the agreement threshold as a dashed line: a round whose first part crosses it has
 * converged.
 */
export function StackedBars({
  rounds,
  answers,
  threshold,
  title,
}: {
  rounds: StackedRound[];
  answers: string[];
  threshold: number | null;
  title: string;
}) {
  const colour = (answer: string) => `series-${Math.max(answers.indexOf(answer), 0) % 7}`;
  const described = rounds
    .map((r) => `round ${r.round}: ${r.parts.map((p) => `${p.answer} ${p.percentage}%`).join(', ')}`)
    .join('; ');
  return (
    <div className="figure stacked">
      <div className="scale-rows" role="img" aria-label={`${title}. ${described}`}>
        {rounds.map((r) => (
          <div key={r.round} className="scale-row" data-round={r.round}>
            <div className="scale-label">
              <span>Round {r.round}</span>
              <span className="value">agreement {r.agreement}%</span>
            </div>
            <div className="scale-track">
              <div className="stack">
                {[...r.parts]
                  .sort((a, b) => b.percentage - a.percentage)
                  .map((p) => (
                    <span
                      key={p.answer}
                      className={`slice ${colour(p.answer)}`}
                      title={`${p.answer}: ${p.percentage}%`}
                      data-answer={p.answer}
                      style={{ width: `${p.percentage}%` }}
                    />
                  ))}
              </div>
              {threshold !== null && <span className="threshold-mark" style={{ left: `${threshold}%` }} />}
            </div>
          </div>
        ))}
        <div className="scale-row">
          <Axis ticks={[0, 25, 50, 75, 100]} min={0} max={100} format={(v) => `${v}%`} />
        </div>
      </div>
      <Legend
        items={[
          ...answers.map((a) => ({ key: a, swatch: colour(a), label: a })),
          ...(threshold === null
            ? []
            : [{ key: 'threshold', swatch: 'dashed', label: `converged at ${threshold}% agreement` }]),
        ]}
      />
    </div>
  );
}

/** Lines removed and added between two texts (longest common subsequence of lines). */
export function lineDiff(
  before: string,
  after: string,
): { kind: 'same' | 'added' | 'removed'; text: string }[] {
  const a = before.split('\n');
  const b = after.split('\n');
  const lcs = Array.from({ length: a.length + 1 }, () => new Array<number>(b.length + 1).fill(0));
  for (let i = a.length - 1; i >= 0; i--) {
    for (let j = b.length - 1; j >= 0; j--)
      lcs[i][j] = a[i] === b[j] ? lcs[i + 1][j + 1] + 1 : Math.max(lcs[i + 1][j], lcs[i][j + 1]);
  }
  const out: { kind: 'same' | 'added' | 'removed'; text: string }[] = [];
  let i = 0;
  let j = 0;
  while (i < a.length || j < b.length) {
    if (i < a.length && j < b.length && a[i] === b[j]) {
      out.push({ kind: 'same', text: a[i++] });
      j++;
    } else if (j < b.length && (i >= a.length || lcs[i][j + 1] >= lcs[i + 1][j]))
      out.push({ kind: 'added', text: b[j++] });
    else out.push({ kind: 'removed', text: a[i++] });
  }
  return out;
}
