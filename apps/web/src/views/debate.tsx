import type { DebateResult } from '@conclave/contracts';
import { lineDiff } from '../charts';
import { AnswerCard, LabelName, VotesSection, WinnerAnswer } from './ballots';
import { labelsFor, NameChip, NamedMarkdown, NamedText, type Labels } from './names';
import { Section } from './section';
import { ViewStyles } from './style';

/**
 * Round 1's labels are the ones the revisions cite; the vote's are shuffled again, so a round 1
 * label says so in its badge.
 */
const ROUND1 = 'round 1';

export function DebateView({ result }: { result: Partial<DebateResult> }) {
  const round1: Labels = result.round1LabelMap ?? {};
  const revised: Labels = result.revisedLabelMap ?? result.votes?.revisedLabelToModel ?? {};
  const tallies = result.votes?.tallies ?? {};
  const winner = result.winner;
  const revisions = result.revisions ?? [];
  const revisionLabels = labelsFor(
    revisions.map((r) => r.model),
    revised,
  );
  const round1Answers = result.round1 ?? [];
  const round1Labels = labelsFor(
    round1Answers.map((a) => a.model),
    round1,
  );
  return (
    <div className="result debate">
      <ViewStyles />
      {winner && (
        <WinnerAnswer
          // Debate breaks every tie alphabetically.
          winner={{ ...winner, tiebreakerMethod: winner.tiebreakerMethod ?? 'alphabetical' }}
          badge={
            <span className={`badge decision-${winner.winnerDecision ?? 'none'}`}>
              {winner.winnerDecision ?? 'no decision'}
            </span>
          }
          labels={round1}
          scope={ROUND1}
        />
      )}
      {result.revisionSummary && (
        <p className="summary-bar">
          {result.revisionSummary.revised} revised, {result.revisionSummary.stood} stood,{' '}
          {result.revisionSummary.merged} merged
          {result.revisionSummary.parseFailed ? `, ${result.revisionSummary.parseFailed} unreadable` : ''}
        </p>
      )}
      {revisions.length > 0 && (
        <Section label="revisions" heading="Revisions">
          {revisions.map((r, i) => {
            const change = r.revisedWordCount - r.originalWordCount;
            const label = revisionLabels[i];
            const votes = label ? tallies[label] : undefined;
            const won = label !== undefined && label === winner?.winnerLabel;
            return (
              <article key={`${r.model}-${i}`} className={`card revision answer${won ? ' winner' : ''}`}>
                <h4>
                  {r.model}{' '}
                  <span className={`badge decision-${r.decision ?? 'none'}`}>
                    {r.decision ?? 'no decision'}
                  </span>{' '}
                  <small>{change >= 0 ? `+${change}` : change} words</small>
                </h4>
                {r.reasoning && (
                  <p className="reasoning">
                    <NamedText text={r.reasoning} labels={round1} scope={ROUND1} />
                  </p>
                )}
                {result.votes && (
                  <p className="muted">
                    In the vote as{' '}
                    {label ? <span className="label-badge">{label}</span> : 'an unlabelled answer'}:{' '}
                    {votes ?? 0} vote{votes === 1 ? '' : 's'}
                    {won ? ', the winner' : ''}
                  </p>
                )}
                <details>
                  <summary>Revised answer</summary>
                  <NamedMarkdown text={r.revisedResponse} labels={round1} scope={ROUND1} />
                </details>
                <details>
                  <summary>Changes</summary>
                  <pre className="diff">
                    {lineDiff(r.originalResponse, r.revisedResponse).map((line, n) => (
                      <div key={n} className={`diff-${line.kind}`}>
                        {line.kind === 'added' ? '+ ' : line.kind === 'removed' ? '- ' : '  '}
                        <NamedText text={line.text} labels={round1} scope={ROUND1} />
                      </div>
                    ))}
                  </pre>
                </details>
              </article>
            );
          })}
        </Section>
      )}
      {result.votes && (
        <VotesSection
          heading="Votes on the revised answers"
          title="Votes per revised answer"
          votes={result.votes}
          labels={revised}
          winnerLabel={winner?.winnerLabel}
          tiebreak={
            winner?.tiebroken && (
              <p className="tiebreak">
                Debate breaks a tie alphabetically: the first tied label won,{' '}
                <LabelName label={winner.winnerLabel} labels={revised} />.
              </p>
            )
          }
        />
      )}
      {round1Answers.length > 0 && (
        <Section label="round 1 answers" heading="Round 1 answers">
          {round1Answers.map((a, i) => (
            <AnswerCard
              key={`${a.model}-${i}`}
              text={a.response}
              labels={round1}
              scope={ROUND1}
              head={
                <>
                  {round1Labels[i] ? (
                    <NameChip label={round1Labels[i]} model={a.model} scope={ROUND1} />
                  ) : (
                    a.model
                  )}{' '}
                  <small className="muted">{a.responseTimeMs} ms</small>
                </>
              }
            />
          ))}
        </Section>
      )}
    </div>
  );
}
