/**
 * Two batches run on the same items, side by side (`#/compare?a=<id>&b=<id>`): the differences
 * B − A with their paired bootstrap intervals, the items whose outcome flipped, cost and latency.
 * Loaded on demand, like the report page whose pieces it shares.
 */
import type { BatchComparison, ComparedBatch, ComparisonDifference } from '@conclave/contracts';
import { reportPath } from './compare-picker';
import {
  count,
  FigureValue,
  IntervalChart,
  ItemLink,
  LoadFailed,
  MarkdownActions,
  MethodsSection,
  ms,
  num,
  pct,
  RateValue,
  ReportStyles,
  rowOf,
  signed,
  Table,
  usd,
  UsageFacts,
  useLoad,
} from './report';

/** Measures that are shares (0–1): their differences read as percentage points. */
const isShare = (d: ComparisonDifference) =>
  /rate|share|proportion|agreement|converged/i.test(d.measure) &&
  [d.a, d.b].every((v) => v === null || (v >= 0 && v <= 1));

const points = (v: number | null) =>
  v === null
    ? '—'
    : Math.abs(v) < 1e-12
      ? '0 pts'
      : `${v > 0 ? '+' : '−'}${Math.abs(v * 100).toFixed(1)} pts`;

const pValue = (p: number | null) =>
  p === null ? '—' : p < 0.001 ? p.toExponential(1) : p.toFixed(3).replace(/0+$/, '').replace(/\.$/, '');

function BatchCard({ side, batch }: { side: 'A' | 'B'; batch: ComparedBatch }) {
  return (
    <div className="card compared-batch" data-side={side}>
      <h3>
        {side}: {batch.name ?? `Batch ${batch.batchId.slice(0, 8)}`}{' '}
        <span className={`badge status status-${batch.status}`}>{batch.status}</span>
      </h3>
      <p>
        {count(batch.items.complete)} of {count(batch.items.total)} items complete,{' '}
        {count(batch.items.failed)} failed
        {batch.partial ? `, ${count(batch.items.unfinished)} still running` : ''}.
      </p>
      <p>
        <a href={reportPath(batch.batchId)}>Its report</a> ·{' '}
        <a href={`#/batches/${encodeURIComponent(batch.batchId)}`}>The batch</a>
      </p>
    </div>
  );
}

export function CompareView({ comparison }: { comparison: BatchComparison }) {
  const { seats, flipTests } = comparison;
  const c = comparison;
  const measures = [...new Set(c.differences.map((d) => d.measure))];
  const mdPath = `/api/batches/compare?${new URLSearchParams({ a: c.a.batchId, b: c.b.batchId, format: 'md' }).toString()}`;
  const models = c.models;
  const holm = flipTests.length > 1;
  return (
    <div className="result report compare" data-a={c.a.batchId} data-b={c.b.batchId}>
      <ReportStyles />
      <div className="report-head">
        <h2>Compare two {c.mode} batches</h2>
      </div>
      <MarkdownActions
        path={mdPath}
        filename={`compare-${c.a.batchId.slice(0, 8)}-${c.b.batchId.slice(0, 8)}.md`}
      />
      <div className="side-by-side">
        <BatchCard side="A" batch={c.a} />
        <BatchCard side="B" batch={c.b} />
      </div>
      <p>
        Items matched by {c.matchedBy === 'key' ? 'their key' : 'their position in the batch'}:{' '}
        {count(c.pairs)} pairs, {count(c.completePairs)} complete on both sides (the n of every difference).
        Differences are B − A with a {Math.round(c.method.confidence * 100)}% paired bootstrap interval (
        {count(c.method.resamples)} resamples).
      </p>
      {(c.unmatched.onlyInACount > 0 || c.unmatched.onlyInBCount > 0) && (
        <p className="banner" role="note">
          Keys only in A ({count(c.unmatched.onlyInACount)}): {c.unmatched.onlyInA.join(', ') || '—'}. Keys
          only in B ({count(c.unmatched.onlyInBCount)}): {c.unmatched.onlyInB.join(', ') || '—'}.
        </p>
      )}
      {c.notes.length > 0 && (
        <ul className="notes" aria-label="notes">
          {c.notes.map((n, i) => (
            <li key={i}>{n}</li>
          ))}
        </ul>
      )}
      {seats.some((s) => s.changed) && (
        <section aria-label="changed seats" className="report-part">
          <h3>Seats that changed model</h3>
          <p>Per-model figures are compared by seat (roster position), so a renamed model keeps its row.</p>
          <ul>
            {seats
              .filter((s) => s.changed)
              .map((s) => (
                <li key={s.seat}>
                  Seat {s.seat}: {s.a.join(', ') || '—'} → {s.b.join(', ') || '—'}
                </li>
              ))}
          </ul>
        </section>
      )}
      <section aria-label="flipped items" className="report-part">
        <h3>Flipped outcomes</h3>
        <p>
          Items whose {c.outcome} differs between A and B: <RateValue rate={c.flipped} />.
        </p>
        {c.flips.length > 0 && (
          <ol className="item-list flips">
            {c.flips.map((f) => (
              <li key={`${f.a.messageId}-${f.b.messageId}`}>
                <ItemLink item={f.a} />: {f.outcomeA} <span className="flip-arrow">→ B</span> {f.outcomeB} (
                <a href={`#/m/${encodeURIComponent(f.b.messageId)}`}>B&apos;s item {f.b.index}</a>)
              </li>
            ))}
          </ol>
        )}
        {c.flipped.count > c.flips.length && (
          <p className="muted">The first {c.flips.length} are listed; the Markdown has the same list.</p>
        )}
        {flipTests.length > 0 && (
          <Table
            label="change per outcome"
            caption={
              <>
                Exact McNemar test per outcome
                {flipTests.length > 1 ? ', Holm-adjusted over the outcomes listed' : ''}.
              </>
            }
            head={['outcome', 'in A only', 'in B only', 'p', ...(holm ? ['Holm-adjusted p'] : [])]}
          >
            {flipTests.map((t) => (
              <tr key={t.outcome}>
                <th scope="row">{t.outcome}</th>
                <td className="num">{count(t.onlyA)}</td>
                <td className="num">{count(t.onlyB)}</td>
                <td className="num">{pValue(t.pValue)}</td>
                {holm && <td className="num">{pValue(t.holmAdjustedPValue)}</td>}
              </tr>
            ))}
          </Table>
        )}
      </section>
      <section aria-label="differences" className="report-part">
        <h3>Differences (B − A)</h3>
        {c.differences.length === 0 && <p className="muted">No measure could be compared.</p>}
        {measures.map((measure) => {
          const rows = c.differences.filter((d) => d.measure === measure);
          const share = rows.every(isShare);
          return (
            <IntervalChart
              key={measure}
              title={`${measure}: B − A`}
              rows={rows.map((d, i) => rowOf(`${i}`, d.subject || measure, d.difference))}
              format={share ? points : (v) => (Math.abs(v) < 1e-9 ? '0' : signed(v))}
              tickFormat={share ? (v) => signed(Math.round(v * 1000) / 10) : undefined}
              reference={{ value: 0, label: 'no difference' }}
              symmetric
              caption={share ? 'In percentage points.' : undefined}
            />
          );
        })}
        {c.differences.length > 0 && (
          <Table label="differences" head={['measure', 'of', 'A', 'B', 'B − A']}>
            {c.differences.map((d, i) => {
              const share = isShare(d);
              return (
                <tr key={i}>
                  <td>{d.measure}</td>
                  <th scope="row">{d.subject || '—'}</th>
                  <td className="num">{share ? pct(d.a) : num(d.a)}</td>
                  <td className="num">{share ? pct(d.b) : num(d.b)}</td>
                  <td>
                    <FigureValue figure={d.difference} format={share ? points : signed} />
                  </td>
                </tr>
              );
            })}
          </Table>
        )}
      </section>
      <section aria-label="cost and latency" className="report-part">
        <h3>Cost and latency</h3>
        <div className="side-by-side">
          <div className="card">
            <h4>A</h4>
            <UsageFacts usage={c.usage.a} />
          </div>
          <div className="card">
            <h4>B</h4>
            <UsageFacts usage={c.usage.b} />
          </div>
        </div>
        {models.length > 0 && (
          <Table
            label="models in A and B"
            head={['model', 'calls A / B', 'failed A / B', 'cost A / B', 'latency p50 A / B', 'p95 A / B']}
          >
            {models.map((m) => (
              <tr key={m.model}>
                <th scope="row">{m.model}</th>
                <td className="num">
                  {m.a ? count(m.a.calls) : '—'} / {m.b ? count(m.b.calls) : '—'}
                </td>
                <td className="num">
                  {pct(m.a?.failedCalls.value)} / {pct(m.b?.failedCalls.value)}
                </td>
                <td className="num">
                  {usd(m.a?.costUsd)} / {usd(m.b?.costUsd)}
                </td>
                <td className="num">
                  {ms(m.a?.latencyMs.p50)} / {ms(m.b?.latencyMs.p50)}
                </td>
                <td className="num">
                  {ms(m.a?.latencyMs.p95)} / {ms(m.b?.latencyMs.p95)}
                </td>
              </tr>
            ))}
          </Table>
        )}
      </section>
      <MethodsSection methods={c.method.methods} />
    </div>
  );
}

export function ComparePage({ a, b }: { a: string; b: string }) {
  const path = a && b ? `/api/batches/compare?${new URLSearchParams({ a, b }).toString()}` : null;
  const [load] = useLoad<BatchComparison>(path);
  if (!a || !b)
    return (
      <div className="not-found" role="alert">
        <h3>Two batches are needed</h3>
        <p>
          Open a batch and pick another one to compare it with, or use a link of the form{' '}
          <code>#/compare?a=&lt;batch&gt;&amp;b=&lt;batch&gt;</code>.
        </p>
      </div>
    );
  if (load.state === 'loading')
    return (
      <p className="loading muted" role="status">
        Comparing the batches…
      </p>
    );
  if (load.state === 'failed')
    return load.status === 400 ? (
      <div className="not-found load-failed" role="alert" data-testid="report-failed">
        <h3>These batches cannot be compared</h3>
        <p>{load.message}</p>
      </div>
    ) : (
      <LoadFailed what="Batch" status={load.status} message={load.message} />
    );
  return <CompareView comparison={load.data} />;
}

export default ComparePage;
