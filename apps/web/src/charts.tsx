/** Small SVG charts: no chart library, readable at any size. */

export function BarChart({
  bars,
  max,
}: {
  bars: { label: string; value: number; highlight?: boolean }[];
  max?: number;
}) {
  const top = Math.max(max ?? 0, ...bars.map((b) => b.value), 1);
  return (
    <svg className="chart" viewBox={`0 0 320 ${bars.length * 28 + 8}`} role="img" aria-label="bar chart">
      {bars.map((b, i) => (
        <g key={b.label} transform={`translate(0 ${i * 28 + 4})`}>
          <text x="0" y="16" className="chart-label">
            {b.label}
          </text>
          <rect
            x="110"
            y="2"
            height="20"
            width={(190 * b.value) / top}
            className={b.highlight ? 'bar bar-win' : 'bar'}
          />
          <text x={116 + (190 * b.value) / top} y="16" className="chart-value">
            {b.value}
          </text>
        </g>
      ))}
    </svg>
  );
}

export function Radar({ scores, labels }: { scores: (number | null)[]; labels: string[] }) {
  const cx = 140;
  const cy = 100;
  const r = 70;
  const point = (i: number, value: number) => {
    const angle = (Math.PI * 2 * i) / labels.length - Math.PI / 2;
    return [cx + Math.cos(angle) * r * (value / 10), cy + Math.sin(angle) * r * (value / 10)];
  };
  const shape = scores.map((s, i) => point(i, s ?? 0).join(',')).join(' ');
  return (
    <svg className="chart radar" viewBox="0 0 280 200" role="img" aria-label="scores radar chart">
      {[2, 4, 6, 8, 10].map((ring) => (
        <polygon
          key={ring}
          className="radar-ring"
          points={labels.map((_, i) => point(i, ring).join(',')).join(' ')}
        />
      ))}
      <polygon className="radar-shape" points={shape} />
      {labels.map((label, i) => {
        const [x, y] = point(i, 12.5);
        return (
          <text key={label} x={x} y={y} textAnchor="middle" className="chart-label">
            {label} {scores[i] ?? '–'}
          </text>
        );
      })}
    </svg>
  );
}

/** Mean per round with a shaded ± standard deviation band. */
export function BandChart({ points }: { points: { round: number; mean: number; sd: number }[] }) {
  const w = 320;
  const h = 160;
  const lo = Math.min(...points.map((p) => p.mean - p.sd));
  const hi = Math.max(...points.map((p) => p.mean + p.sd));
  const span = hi - lo || 1;
  const x = (i: number) => 30 + (i * (w - 60)) / Math.max(points.length - 1, 1);
  const y = (v: number) => h - 20 - ((v - lo) * (h - 40)) / span;
  const band = [
    ...points.map((p, i) => `${x(i)},${y(p.mean + p.sd)}`),
    ...[...points].reverse().map((p, i) => `${x(points.length - 1 - i)},${y(p.mean - p.sd)}`),
  ].join(' ');
  return (
    <svg className="chart" viewBox={`0 0 ${w} ${h}`} role="img" aria-label="convergence chart">
      <polygon className="band" points={band} />
      <polyline className="mean-line" points={points.map((p, i) => `${x(i)},${y(p.mean)}`).join(' ')} />
      {points.map((p, i) => (
        <text key={p.round} x={x(i)} y={h - 4} textAnchor="middle" className="chart-label">
          R{p.round}
        </text>
      ))}
    </svg>
  );
}

export function StackedBars({
  rounds,
}: {
  rounds: { round: number; parts: { answer: string; percentage: number }[] }[];
}) {
  const answers = [...new Set(rounds.flatMap((r) => r.parts.map((p) => p.answer)))];
  return (
    <svg
      className="chart"
      viewBox={`0 0 320 ${rounds.length * 30 + 10}`}
      role="img"
      aria-label="distribution by round"
    >
      {rounds.map((r, i) => {
        let offset = 40;
        return (
          <g key={r.round} transform={`translate(0 ${i * 30 + 5})`}>
            <text x="0" y="16" className="chart-label">
              R{r.round}
            </text>
            {r.parts.map((p) => {
              const width = (p.percentage / 100) * 270;
              const rect = (
                <rect
                  key={p.answer}
                  x={offset}
                  y="2"
                  width={width}
                  height="20"
                  className={`slice slice-${answers.indexOf(p.answer) % 6}`}
                >
                  <title>{`${p.answer}: ${p.percentage}%`}</title>
                </rect>
              );
              offset += width;
              return rect;
            })}
          </g>
        );
      })}
    </svg>
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
