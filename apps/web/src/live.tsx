import type { DeliberationView } from '@conclave/contracts';
import { memo, useEffect, useRef, useState } from 'react';
import { ApiFailure, cancelDeliberation, retryingNote, retryWhileUnavailable } from './api';
import { Markdown } from './markdown';
import type { Participant, TimelineState } from './timeline';

/** An answer's text, rendered again only when it changes (not at every tick of a clock). */
const AnswerText = memo(Markdown);

/** `3.4 s` under a minute, then `2:05`. */
export function formatElapsed(ms: number): string {
  const seconds = Math.max(0, ms) / 1000;
  if (seconds < 60) return `${seconds.toFixed(1)} s`;
  const whole = Math.floor(seconds);
  return `${Math.floor(whole / 60)}:${String(whole % 60).padStart(2, '0')}`;
}

/** The time from `from` to `to`, counting on while `to` is not known yet. */
export function Elapsed({ from, to }: { from: string; to?: string | null }) {
  const [now, setNow] = useState(() => Date.now());
  const running = !to;
  useEffect(() => {
    if (!running) return;
    const timer = setInterval(() => setNow(Date.now()), 100);
    return () => clearInterval(timer);
  }, [running]);
  const end = to ? Date.parse(to) : now;
  return (
    <span className="elapsed" data-running={running ? 'yes' : 'no'}>
      {formatElapsed(end - Date.parse(from))}
    </span>
  );
}

const RUNNING: readonly string[] = ['waiting', 'answering', 'retried'];

/** How long a call took: counting while it runs, its response time once it settled. */
function CallTime({ call }: { call: Participant }) {
  if (call.startedAt && RUNNING.includes(call.state)) {
    return (
      <>
        {' · '}
        <Elapsed from={call.startedAt} />
      </>
    );
  }
  if (call.responseTimeMs !== undefined) return <>{` · ${call.responseTimeMs} ms`}</>;
  if (call.startedAt && call.settledAt) {
    return (
      <>
        {' · '}
        <Elapsed from={call.startedAt} to={call.settledAt} />
      </>
    );
  }
  return null;
}

/** Why a call's text is not its whole answer, or null when it is (or it is still being written). */
function incompleteNote(call: Participant, finished: TimelineState['finished']): string | null {
  if (call.final) return null;
  if (call.state === 'failed') return 'Incomplete: the call failed.';
  if (call.state !== 'stopped') return null;
  return finished === 'cancelled'
    ? 'Incomplete: the deliberation was stopped while this answer was being written.'
    : 'Incomplete: the deliberation ended while this answer was being written.';
}

function CallItem({
  call,
  showAnswer,
  finished,
}: {
  call: Participant;
  showAnswer: boolean;
  finished: TimelineState['finished'];
}) {
  const note = incompleteNote(call, finished);
  return (
    <li className={`call call-${call.state}`} data-participant={call.id}>
      <div className="call-head">
        {call.label}: {call.state}
        {call.retries > 0 ? ` (retried ${call.retries}×)` : ''}
        <CallTime call={call} />
        {call.error ? ` · ${call.error}` : ''}
        {call.truncated && <span className="badge badge-warn truncated">truncated</span>}
      </div>
      {showAnswer && call.text !== '' && (
        <div className="call-answer" data-final={call.final ? 'yes' : 'no'}>
          <AnswerText text={call.text} />
          {call.truncated && <p className="call-note">Cut short: the model reached its length limit.</p>}
          {note && <p className="call-note">{note}</p>}
        </div>
      )}
    </li>
  );
}

/**
 * Each stage's calls: state and time, and (`showAnswers`) each answer as it is written, whole once
 * it lands, and kept, marked incomplete, when the deliberation stopped before it was done.
 */
export function Timeline({ timeline, showAnswers }: { timeline: TimelineState; showAnswers: boolean }) {
  return (
    <ol className={showAnswers ? 'timeline with-answers' : 'timeline'} aria-label="progress">
      {timeline.stages.map((stage) => (
        <li key={stage.name}>
          <strong>{stage.name}</strong>
          <ul>
            {stage.participants.map((p) => (
              <CallItem key={p.id} call={p} showAnswer={showAnswers} finished={timeline.finished} />
            ))}
          </ul>
        </li>
      ))}
    </ol>
  );
}

/** The run's elapsed time and, while it runs, the button that stops it. */
export function RunBar({
  view,
  active,
  endedAt,
  onStopped,
}: {
  view: DeliberationView;
  active: boolean;
  endedAt: string | null;
  onStopped: (view: DeliberationView) => void;
}) {
  const [stopping, setStopping] = useState(false);
  const [outcome, setOutcome] = useState<string | null>(null);
  // Retries stop when the bar goes away (another deliberation shown).
  const gone = useRef(false);
  useEffect(() => {
    gone.current = false;
    return () => {
      gone.current = true;
    };
  }, []);
  const stop = async () => {
    setStopping(true);
    setOutcome(null);
    try {
      // While the server is briefly away (503) the stop is asked for again, and says so.
      const stopped = await retryWhileUnavailable(
        () => cancelDeliberation(view.messageId),
        (seconds) => setOutcome(retryingNote(seconds)),
        { stopped: () => gone.current },
      );
      setOutcome(`Stopped: ${stopped.error ?? 'cancelled'}`);
      onStopped(stopped);
    } catch (error) {
      setOutcome(error instanceof ApiFailure ? error.body.message : 'Could not reach the server to stop it.');
      setStopping(false);
    }
  };
  return (
    <div className="run-bar">
      <span>
        Elapsed <Elapsed from={view.createdAt} to={active ? null : (endedAt ?? view.completedAt)} />
      </span>
      {(active || stopping) && (
        <button
          type="button"
          className="danger stop"
          onClick={() => void stop()}
          disabled={stopping || !active}
        >
          {stopping ? (active ? 'Stopping…' : 'Stopped') : 'Stop'}
        </button>
      )}
      {outcome && (
        <span role="status" className="stop-outcome">
          {outcome}
        </span>
      )}
    </div>
  );
}
