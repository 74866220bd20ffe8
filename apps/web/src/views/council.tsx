import type { CouncilResult } from '@conclave/contracts';
import { useState } from 'react';
import { Markdown } from '../markdown';

export function CouncilView({ result }: { result: Partial<CouncilResult> }) {
  const [tab, setTab] = useState(0);
  const answers = result.stage1 ?? [];
  return (
    <div className="result council">
      {result.stage3 && (
        <section className="main-answer" aria-label="synthesis">
          <h3>Synthesis by {result.stage3.model}</h3>
          <Markdown text={result.stage3.response} />
        </section>
      )}
      {answers.length > 0 && (
        <section>
          <h3>Answers</h3>
          <div role="tablist" className="tabs">
            {answers.map((a, i) => (
              <button key={a.model} role="tab" aria-selected={tab === i} onClick={() => setTab(i)}>
                {a.model} <small>{a.responseTimeMs} ms</small>
              </button>
            ))}
          </div>
          {answers[tab] && <Markdown text={answers[tab].response} />}
        </section>
      )}
      {result.stage2Metadata && (
        <section>
          <h3>Aggregate ranking</h3>
          <table>
            <thead>
              <tr>
                <th>#</th>
                <th>Model</th>
                <th>Average rank</th>
                <th>Rankings</th>
              </tr>
            </thead>
            <tbody>
              {result.stage2Metadata.aggregateRankings.map((r, i) => (
                <tr key={r.model}>
                  <td>{i + 1}</td>
                  <td>{r.model}</td>
                  <td>{r.averageRank}</td>
                  <td>{r.rankingsCount}</td>
                </tr>
              ))}
            </tbody>
          </table>
          <p className="reveal">
            {Object.entries(result.stage2Metadata.labelToModel).map(([label, model]) => (
              <span key={label}>
                {label} = {model}
              </span>
            ))}
          </p>
          {(result.stage2 ?? []).map((r) => (
            <details key={r.model}>
              <summary>
                {r.model}: {r.parsedRanking.length ? r.parsedRanking.join(' › ') : 'no ranking could be read'}
              </summary>
              <Markdown text={r.ranking} />
            </details>
          ))}
        </section>
      )}
    </div>
  );
}
