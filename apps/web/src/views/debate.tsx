import type { DebateResult } from '@conclave/contracts';
import { BarChart, lineDiff } from '../charts';
import { Markdown } from '../markdown';

export function DebateView({ result }: { result: Partial<DebateResult> }) {
  const tallies = result.votes?.tallies ?? {};
  return (
    <div className="result debate">
      {result.winner && (
        <section className="main-answer" aria-label="winner">
          <h3>
            Winner: {result.winner.winnerModel}{' '}
            <span className="badge">{result.winner.winnerDecision ?? 'no decision'}</span>{' '}
            <span className="badge">
              {result.winner.voteCount}/{result.winner.totalVotes} votes
            </span>
          </h3>
          <Markdown text={result.winner.winnerResponse} />
        </section>
      )}
      {result.revisionSummary && (
        <p className="summary-bar">
          {result.revisionSummary.revised} revised, {result.revisionSummary.stood} stood,{' '}
          {result.revisionSummary.merged} merged
          {result.revisionSummary.parseFailed ? `, ${result.revisionSummary.parseFailed} unreadable` : ''}
        </p>
      )}
      {(result.revisions ?? []).map((r, i) => {
        const change = r.revisedWordCount - r.originalWordCount;
        return (
          <article key={`${r.model}-${i}`} className="card">
            <h4>
              {r.model}{' '}
              <span className={`badge decision-${r.decision ?? 'none'}`}>{r.decision ?? 'no decision'}</span>{' '}
              <small>{change >= 0 ? `+${change}` : change} words</small>
            </h4>
            {r.reasoning && <p className="muted">{r.reasoning}</p>}
            <details>
              <summary>Changes</summary>
              <pre className="diff">
                {lineDiff(r.originalResponse, r.revisedResponse).map((line, n) => (
                  <div key={n} className={`diff-${line.kind}`}>
                    {line.kind === 'added' ? '+ ' : line.kind === 'removed' ? '- ' : '  '}
                    {line.text}
                  </div>
                ))}
              </pre>
            </details>
          </article>
        );
      })}
      {result.revisedLabelMap && result.votes && (
        <section>
          <h3>Votes on the revised answers</h3>
          <BarChart
            bars={Object.entries(result.revisedLabelMap).map(([label, model]) => ({
              label: `${label} (${model})`,
              value: tallies[label] ?? 0,
              highlight: label === result.winner?.winnerLabel,
            }))}
          />
        </section>
      )}
      {result.round1 && (
        <details>
          <summary>Round 1 answers</summary>
          {result.round1.map((a, i) => (
            <article key={i} className="card">
              <h4>{a.model}</h4>
              <Markdown text={a.response} />
            </article>
          ))}
        </details>
      )}
    </div>
  );
}
