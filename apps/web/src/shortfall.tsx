import type { Degradation, MissingContribution, PartialResult } from '@conclave/contracts';

const KIND_WORDS: Record<MissingContribution['kind'], string> = {
  failed: 'failed',
  cancelled: 'stopped',
  cut: 'cut',
  unreadable: 'unreadable',
};

/**
 * Who was asked and did not answer readably, and why: at the top of a turn, so a run that went on
 * without a member never reads as the whole panel's ("2 of 3 answered — sim/x: upstream error").
 */
export function DegradedNotice({ degraded }: { degraded: Degradation }) {
  return (
    <section className="degraded" role="note" aria-label="missing participants" data-testid="degraded">
      <p className="degraded-summary">
        <span className="badge badge-warn">incomplete panel</span> {degraded.summary}
      </p>
      {degraded.missing.length > 1 && (
        <ul className="degraded-list">
          {degraded.missing.map((m, i) => (
            <li key={`${m.stage}-${m.model}-${i}`}>
              <strong className="degraded-model">{m.model}</strong>{' '}
              <span className="muted">
                ({m.role}, {m.stage})
              </span>{' '}
              <span className={`badge kind-${m.kind}`}>{KIND_WORDS[m.kind]}</span> {m.why}
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}

/**
 * What a cancelled or failed run kept of the stage it never finished: which answers had arrived
 * (none of them the mode's final answer; each is shown whole with its call above, beside any text
 * a stopped call had written so far) and each call that did not finish, with why.
 */
export function KeptStage({ partial }: { partial: PartialResult }) {
  const ended = partial.reason === 'cancelled' ? 'was stopped' : 'failed';
  return (
    <section className="kept-stage" aria-label="kept answers" data-testid="kept-stage">
      <h3>
        Kept from the unfinished stage <code>{partial.stage}</code>
      </h3>
      <p className="muted">
        The deliberation {ended}
        {partial.why ? ` (${partial.why.replace(/\.$/, '')})` : ''}
        {partial.answers.length > 0
          ? '. The answers that had arrived are kept, each with its call above; none of them is a final answer.'
          : '. No call of this stage had finished.'}
      </p>
      {partial.answers.length > 0 && (
        <ul className="kept-answers">
          {partial.answers.map((a, i) => (
            <li className="kept-answer" key={`${a.model}-${i}`}>
              <strong className="kept-model">{a.model}</strong> <span className="badge">answered</span>
              {a.finishReason === 'length' && (
                <span className="badge badge-warn truncated">cut at length limit</span>
              )}
            </li>
          ))}
        </ul>
      )}
      {partial.cut.length > 0 && (
        <ul className="kept-cut">
          {partial.cut.map((c, i) => (
            <li key={`${c.model}-${i}`}>
              <strong>{c.model}</strong> <span className="muted">({c.role})</span>{' '}
              <span className={`badge kind-${c.kind}`}>{KIND_WORDS[c.kind]}</span> {c.why}
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}
