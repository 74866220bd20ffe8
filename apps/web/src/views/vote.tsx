import type { VoteResult } from '@conclave/contracts';
import { AnswerCard, byVotes, LabelName, VotesSection } from './ballots';
import { ballotReason, labelsFor, NameChip, NamedMarkdown, type Labels } from './names';
import { ViewStyles } from './style';

export function VoteView({ result }: { result: Partial<VoteResult> }) {
  const labels: Labels = result.labelMap ?? {};
  const tallies = result.votes?.tallies ?? {};
  const winner = result.winner;
  const answers = result.stage1 ?? [];
  const answerLabels = labelsFor(
    answers.map((a) => a.model),
    labels,
  );
  // Every answer, the most voted first (in the order given until the votes are in).
  const order = byVotes(labels, tallies, winner?.winnerLabel);
  const ranked = answers
    .map((answer, i) => ({ answer, label: answerLabels[i] }))
    .sort((a, b) => (a.label ? order.indexOf(a.label) : 99) - (b.label ? order.indexOf(b.label) : 99));
  return (
    <div className="result vote">
      <ViewStyles />
      {winner && (
        <section className="main-answer" aria-label="winner">
          <h3>
            Winner: <NameChip label={winner.winnerLabel} model={winner.winnerModel} />{' '}
            <span className="badge">
              {winner.voteCount}/{winner.totalVotes} votes
            </span>
            {winner.tiebroken && (
              <>
                {' '}
                <span className="badge">tie broken: {winner.tiebreakerMethod}</span>
              </>
            )}
          </h3>
          <NamedMarkdown text={winner.winnerResponse} labels={labels} />
        </section>
      )}
      {result.votes && (
        <VotesSection
          heading="Votes"
          title="Votes per answer"
          votes={result.votes}
          labels={labels}
          winnerLabel={winner?.winnerLabel}
        />
      )}
      {result.tiebreak && (
        <section aria-label="tiebreak">
          <h3>Tiebreak</h3>
          {result.tiebreak.method === 'chairman' ? (
            <p>
              The chairman <strong>{result.tiebreak.model}</strong> chose{' '}
              <LabelName label={result.tiebreak.chosenLabel} labels={labels} />.
            </p>
          ) : (
            <p>
              The chairman <strong>{result.tiebreak.model}</strong> gave no usable choice, so the first tied
              label alphabetically won: <LabelName label={result.tiebreak.chosenLabel} labels={labels} />.
            </p>
          )}
          {result.tiebreak.voteText.trim() && (
            <div className="ballot-reason">
              <NamedMarkdown text={ballotReason(result.tiebreak.voteText)} labels={labels} />
            </div>
          )}
        </section>
      )}
      {ranked.length > 0 && (
        <section aria-label="answers">
          <h3>Answers</h3>
          <div className="answers">
            {ranked.map(({ answer, label }, i) => {
              const won = label !== undefined && label === winner?.winnerLabel;
              const votes = label ? tallies[label] : undefined;
              return (
                <AnswerCard
                  key={`${answer.model}-${i}`}
                  winner={won}
                  text={answer.response}
                  labels={labels}
                  head={
                    <>
                      {label ? <NameChip label={label} model={answer.model} /> : answer.model}{' '}
                      {result.votes && (
                        <span className="badge">
                          {votes ?? 0} vote{votes === 1 ? '' : 's'}
                        </span>
                      )}{' '}
                      {won && <span className="badge badge-ok">winner</span>}{' '}
                      <small className="muted">{answer.responseTimeMs} ms</small>
                    </>
                  }
                />
              );
            })}
          </div>
        </section>
      )}
    </div>
  );
}
