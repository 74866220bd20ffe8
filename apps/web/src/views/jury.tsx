import { DIMENSIONS, type JuryResult } from '@conclave/contracts';
import { useState } from 'react';
import { BarChart, Radar } from '../charts';
import { Markdown } from '../markdown';

const LABELS = DIMENSIONS.map((d) => d.charAt(0).toUpperCase() + d.slice(1));

export function JuryView({ result }: { result: Partial<JuryResult> }) {
  const [tab, setTab] = useState(0);
  const jurors = result.jurors ?? [];
  const summary = result.jurorSummary;
  return (
    <div className="result jury">
      {result.presentation && (
        <section className="content-card">
          {result.presentation.originalQuestion && (
            <p className="muted">{result.presentation.originalQuestion}</p>
          )}
          <Markdown text={result.presentation.content} />
        </section>
      )}
      {result.foreman && (
        <section className="main-answer" aria-label="foreman report">
          <h3>
            Verdict{' '}
            <span className={`badge verdict-${result.foreman.finalVerdict}`}>
              {result.foreman.finalVerdict}
            </span>
          </h3>
          <Markdown text={result.foreman.reportText} />
        </section>
      )}
      {jurors.length > 0 && (
        <section>
          <h3>Jurors</h3>
          <div role="tablist" className="tabs juror-tabs">
            {jurors.map((j, i) => (
              <button key={i} role="tab" aria-selected={tab === i} onClick={() => setTab(i)}>
                {j.model}
              </button>
            ))}
          </div>
          <div className="cards">
            {jurors.map((j, i) => (
              <article key={i} className={`card ${tab === i ? 'active' : ''}`}>
                <h4>
                  {j.model}{' '}
                  <span className={`badge verdict-${j.verdict ?? 'none'}`}>{j.verdict ?? 'no verdict'}</span>
                </h4>
                <small>{j.responseTimeMs} ms</small>
                <Radar scores={DIMENSIONS.map((d) => j.scores[d])} labels={LABELS} />
                <details>
                  <summary>Assessment</summary>
                  <Markdown text={j.assessmentText} />
                </details>
              </article>
            ))}
          </div>
        </section>
      )}
      {summary && (
        <section>
          <h3>Dimensions (average, min–max)</h3>
          <table>
            <tbody>
              {DIMENSIONS.map((d, i) => (
                <tr key={d}>
                  <td>{LABELS[i]}</td>
                  <td>{summary.dimensionAverages[d] ?? '–'}</td>
                  <td>
                    {summary.dimensionRanges[d].min ?? '–'}–{summary.dimensionRanges[d].max ?? '–'}
                  </td>
                  <td className="meter">
                    <span style={{ width: `${((summary.dimensionAverages[d] ?? 0) / 10) * 100}%` }} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
          <h3>Verdicts</h3>
          <BarChart
            bars={[
              { label: 'APPROVE', value: summary.voteTally.approve },
              { label: 'REVISE', value: summary.voteTally.revise },
              { label: 'REJECT', value: summary.voteTally.reject },
            ]}
          />
        </section>
      )}
    </div>
  );
}
