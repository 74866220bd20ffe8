import type { VoteResult } from '@conclave/contracts';
import { BarChart } from '../charts';
import { Markdown } from '../markdown';

export function VoteView({ result }: { result: Partial<VoteResult> }) {
  const tallies = result.votes?.tallies ?? {};
  return (
    <div className="result vote">
      {result.winner && (
        <section className="main-answer" aria-label="winner">
          <h3>
            Winner: {result.winner.winnerLabel} ({result.winner.winnerModel}){' '}
            <span className="badge">
              {result.winner.voteCount}/{result.winner.totalVotes} votes
            </span>
            {result.winner.tiebroken && (
              <span className="badge">tie broken: {result.winner.tiebreakerMethod}</span>
            )}
          </h3>
          <Markdown text={result.winner.winnerResponse} />
        </section>
      )}
      {result.labelMap && (
        <section>
          <h3>Votes</h3>
          <BarChart
            bars={Object.keys(result.labelMap).map((label) => ({
              label: `${label}`,
              value: tallies[label] ?? 0,
              highlight: label === result.winner?.winnerLabel,
            }))}
          />
          {result.votes?.isTie && <p>Tie between {result.votes.tiedLabels.join(' and ')}.</p>}
          {result.tiebreak && (
            <p>
              Tiebreak by {result.tiebreak.model}: {result.tiebreak.chosenLabel} ({result.tiebreak.method})
            </p>
          )}
          <p className="reveal">
            {Object.entries(result.labelMap).map(([label, model]) => (
              <span key={label}>
                {label} = {model}
              </span>
            ))}
          </p>
        </section>
      )}
    </div>
  );
}
