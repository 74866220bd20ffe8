import type { VoteResult } from '@conclave/contracts';
import { AnswerCard, byVotes, LabelName, VotesSection, WinnerAnswer } from './ballots';
import { ballotReason, labelsFor, NameChip, NamedMarkdown, type Labels } from './names';
import { Section } from './section';
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
      {winner && <WinnerAnswer winner={winner} labels={labels} />}
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
        <Section label="tiebreak" heading="Tiebreak">
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
        </Section>
      )}
      {ranked.length > 0 && (
        <Section label="answers" heading="Answers">
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
        </Section>
      )}
    </div>
  );
}
