import type { VoteResponse, VoteTallyResult, VoteWinnerResult } from '@conclave/contracts';
import { useState, type ReactNode } from 'react';
import { BarChart } from '../charts';
import { MainAnswer, Section } from './section';
import { ballotReason, NameChip, NamedMarkdown, type Labels } from './names';

/** A label as a name chip once the map has it, as itself until then. */
export function LabelName({ label, labels, scope }: { label: string; labels: Labels; scope?: string }) {
  return Object.hasOwn(labels, label) ? (
    <NameChip label={label} model={labels[label]} scope={scope} />
  ) : (
    <span className="label-badge">{label}</span>
  );
}

/** Labels in order of their votes (most first; the winner first of a tie), then alphabetically. */
export function byVotes(labels: Labels, tallies: Record<string, number>, winner?: string): string[] {
  return Object.keys({ ...labels, ...tallies }).sort(
    (a, b) =>
      (tallies[b] ?? 0) - (tallies[a] ?? 0) ||
      Number(b === winner) - Number(a === winner) ||
      a.localeCompare(b),
  );
}

/** The tally as bars, one per answer (named), the winner's highlighted. */
export function VoteTally({
  labels,
  tallies,
  winnerLabel,
  title,
  scope,
}: {
  labels: Labels;
  tallies: Record<string, number>;
  winnerLabel?: string;
  title: string;
  scope?: string;
}) {
  return (
    <BarChart
      title={title}
      axisTitle="votes"
      bars={byVotes(labels, tallies, winnerLabel).map((label) => ({
        key: label,
        label: <LabelName label={label} labels={labels} scope={scope} />,
        text: labels[label] ? `${labels[label]} (${label})` : label,
        value: tallies[label] ?? 0,
        highlight: label === winnerLabel,
      }))}
    />
  );
}

/** Every ballot: who voted, for whom (named) and why. */
export function Ballots({ votes, labels, scope }: { votes: VoteResponse[]; labels: Labels; scope?: string }) {
  if (votes.length === 0) return null;
  return (
    <ol className="ballots" aria-label="ballots">
      {votes.map((v, i) => (
        <li key={`${v.model}-${i}`} className="ballot" data-voter={v.model}>
          <div className="ballot-head">
            <span className="voter">{v.model}</span>{' '}
            {v.votedFor ? (
              <>
                <span className="muted">voted for</span>{' '}
                <LabelName label={v.votedFor} labels={labels} scope={scope} />
                {labels[v.votedFor] === v.model && <span className="muted"> (its own answer)</span>}
              </>
            ) : (
              <span className="badge badge-warn">no valid vote</span>
            )}
          </div>
          {v.voteText.trim() && (
            <div className="ballot-reason">
              <NamedMarkdown text={ballotReason(v.voteText)} labels={labels} scope={scope} />
            </div>
          )}
        </li>
      ))}
    </ol>
  );
}

/** "Tie between A and B with 1 vote each." */
export function TieNote({
  tiedLabels,
  labels,
  tallies,
  scope,
}: {
  tiedLabels: string[];
  labels: Labels;
  tallies: Record<string, number>;
  scope?: string;
}) {
  const votes = tallies[tiedLabels[0]] ?? 0;
  return (
    <p className="tie-note">
      Tie between{' '}
      {tiedLabels.map((label, i) => (
        <span key={label}>
          {i > 0 && (i === tiedLabels.length - 1 ? ' and ' : ', ')}
          <LabelName label={label} labels={labels} scope={scope} />
        </span>
      ))}{' '}
      with {votes} vote{votes === 1 ? '' : 's'} each.
    </p>
  );
}

/**
 * A vote's winner (vote's answer, debate's revised answer): its name, `badge` (debate's decision),
 * its votes, the tie it won by breaking, and its text (`labels` and `scope` name the labels it cites).
 */
export function WinnerAnswer({
  winner,
  badge,
  labels,
  scope,
}: {
  winner: VoteWinnerResult;
  badge?: ReactNode;
  labels: Labels;
  scope?: string;
}) {
  return (
    <MainAnswer
      label="winner"
      heading={
        <>
          Winner: <NameChip label={winner.winnerLabel} model={winner.winnerModel} /> {badge && <>{badge} </>}
          <span className="badge">
            {winner.voteCount}/{winner.totalVotes} votes
          </span>
          {winner.tiebroken && (
            <>
              {' '}
              <span className="badge">tie broken: {winner.tiebreakerMethod}</span>
            </>
          )}
        </>
      }
    >
      <NamedMarkdown text={winner.winnerResponse} labels={labels} scope={scope} />
    </MainAnswer>
  );
}

/**
 * A vote's section (vote's answers, debate's revised answers): the tally as bars, how many votes
 * counted, the tie (with `tiebreak`, what the mode says of breaking it) and the ballots.
 */
export function VotesSection({
  heading,
  title,
  votes,
  labels,
  winnerLabel,
  tiebreak,
}: {
  heading: string;
  title: string;
  votes: Omit<VoteTallyResult, 'tallies'> & { tallies?: Record<string, number> };
  labels: Labels;
  winnerLabel?: string;
  tiebreak?: ReactNode;
}) {
  const tallies = votes.tallies ?? {};
  return (
    <Section label="votes" heading={heading}>
      <VoteTally title={title} labels={labels} tallies={tallies} winnerLabel={winnerLabel} />
      <p className="muted">
        {votes.validVoteCount} valid vote{votes.validVoteCount === 1 ? '' : 's'}
        {votes.invalidVoteCount > 0 &&
          `, ${votes.invalidVoteCount} invalid (a failed call or no readable vote)`}
        .
      </p>
      {votes.isTie && (
        <>
          <TieNote tiedLabels={votes.tiedLabels} labels={labels} tallies={tallies} />
          {tiebreak}
        </>
      )}
      <h4>Ballots</h4>
      <Ballots votes={votes.votes} labels={labels} />
    </Section>
  );
}

/** An answer's text, shortened until the reader asks for all of it (the winner's shows whole). */
export function AnswerCard({
  head,
  text,
  labels,
  scope,
  winner,
  open: initiallyOpen = false,
}: {
  head: ReactNode;
  text: string;
  labels?: Labels;
  scope?: string;
  winner?: boolean;
  open?: boolean;
}) {
  const [open, setOpen] = useState(initiallyOpen);
  const long = text.length > 360 || text.split('\n').length > 6;
  return (
    <article className={`card answer${winner ? ' winner' : ''}`}>
      <h4 className="answer-head">{head}</h4>
      <div className={`answer-body${long && !open ? ' collapsed' : ''}`}>
        <NamedMarkdown text={text} labels={labels} scope={scope} />
      </div>
      {long && (
        <button type="button" className="more" aria-expanded={open} onClick={() => setOpen(!open)}>
          {open ? 'Show less' : 'Show the whole answer'}
        </button>
      )}
    </article>
  );
}
