import {
  TERMINAL_EVENT_TYPES,
  type DeliberationView,
  type DeliveredEvent,
  type DelphiConfig,
  type JuryResult,
  type ModeDescription,
  type ModeName,
} from '@conclave/contracts';
import { useCallback, useEffect, useMemo, useRef, useState, type ReactNode } from 'react';
import { ApiFailure, follow, getDeliberation, getModes, retryingNote } from './api';
import {
  claimFocus,
  conversationOfStarted,
  deleteConversation,
  displayTitle,
  getConversation,
  isActiveStatus,
  isImportedTurn,
  isTerminal,
  turnsOf,
  type ConversationDetail,
  type Turn,
} from './conversations';
import { RunBar, Timeline } from './live';
import { Markdown } from './markdown';
import { NewDeliberation } from './new-deliberation';
import { GradesPanel } from './grades';
import { DegradedNotice, KeptStage } from './shortfall';
import { applyEvent, applyLive, emptyTimeline, type TimelineState } from './timeline';
import { CouncilView } from './views/council';
import { DebateView } from './views/debate';
import { DelphiView } from './views/delphi';
import { JuryView } from './views/jury';
import { VoteView } from './views/vote';

/** A deleted or unknown conversation or deliberation: said plainly, with a way on. */
export function NotFound({ what }: { what: 'conversation' | 'deliberation' }) {
  return (
    <div className="not-found" data-testid="not-found">
      <h2>Not found</h2>
      <p>This {what} does not exist: it may have been deleted, or the link is wrong.</p>
      <a className="button" href="#/new">
        Start a new deliberation
      </a>
    </div>
  );
}

function LoadFailed({ onRetry }: { onRetry: () => void }) {
  return (
    <div className="load-failed" role="alert">
      <p>Could not load this page from the server.</p>
      <button type="button" onClick={onRetry}>
        Try again
      </button>
    </div>
  );
}

/** The mode's result view; jury's content shows above it, with the question, so not in it again. */
function ResultBody({
  view,
  events,
  config,
}: {
  view: DeliberationView;
  events: DeliveredEvent[];
  /** The turn's resolved mode config (Delphi reads its convergence threshold and roster there). */
  config: Record<string, unknown> | null;
}) {
  const result = (view.result ?? {}) as never;
  switch (view.mode) {
    case 'council':
      return <CouncilView result={result} />;
    case 'vote':
      return <VoteView result={result} />;
    case 'jury': {
      const jury: Partial<JuryResult> = { ...(view.result as Partial<JuryResult> | null) };
      delete jury.presentation;
      return <JuryView result={jury} />;
    }
    case 'debate':
      return <DebateView result={result} />;
    case 'delphi':
      return (
        <DelphiView
          result={result}
          events={events}
          config={(config ?? undefined) as Partial<DelphiConfig> | undefined}
        />
      );
  }
}

/** What the turn asks: the question, or for jury the content under evaluation and its question. */
function TurnQuestion({
  turn,
  mode,
  view,
  id,
}: {
  turn: Turn;
  mode: ModeName;
  view: DeliberationView | null;
  id: string;
}) {
  if (mode === 'jury') {
    const presentation = (view?.result as Partial<JuryResult> | null)?.presentation;
    const given = turn.config?.originalQuestion;
    const original = typeof given === 'string' && given ? given : (presentation?.originalQuestion ?? null);
    return (
      <section className="turn-question content-card" id={id} aria-label="content under evaluation">
        {original && <p className="muted original-question">Question: {original}</p>}
        <Markdown text={turn.question || presentation?.content || ''} />
      </section>
    );
  }
  return (
    <div className="turn-question" id={id}>
      <p className="question">{turn.question}</p>
    </div>
  );
}

const useLatest = <T,>(value: T) => {
  const ref = useRef(value);
  ref.current = value;
  return ref;
};

/** One turn: its question, then its deliberation as it runs (calls, clock, Stop), then its result. */
function TurnView({
  turn,
  mode,
  index,
  scrollTo,
  onSettled,
  onTitle,
}: {
  turn: Turn;
  mode: ModeName;
  index: number;
  scrollTo: boolean;
  onSettled: () => void;
  onTitle: () => void;
}) {
  const messageId = turn.messageId;
  const [timeline, setTimeline] = useState<TimelineState>(emptyTimeline);
  const [own, setOwn] = useState<DeliberationView | null>(null);
  // Seconds until the event subscription is asked for again while the server is briefly away.
  const [unavailable, setUnavailable] = useState<number | null>(null);
  const view = own ?? turn.view;
  const callbacks = useLatest({ onSettled, onTitle });
  const ref = useRef<HTMLLIElement>(null);

  // The view again after each stored event, one request at a time.
  const loading = useRef(false);
  const again = useRef(false);
  const reload = useCallback(() => {
    if (!messageId) return;
    if (loading.current) {
      again.current = true;
      return;
    }
    loading.current = true;
    getDeliberation(messageId)
      .then(setOwn, () => undefined)
      .finally(() => {
        loading.current = false;
        if (again.current) {
          again.current = false;
          reload();
        }
      });
  }, [messageId]);

  const imported = isImportedTurn(turn);
  const settledAtStart = useRef(isTerminal(turn.status));
  useEffect(() => {
    // An imported turn has no events to follow.
    if (!messageId || imported) return;
    return follow(messageId, {
      onEvent: (event) => {
        setTimeline((t) => applyEvent(t, event));
        // A turn that had ended when the page opened only replays: its view is already whole.
        if (settledAtStart.current) return;
        if (event.type === 'title_complete') callbacks.current.onTitle();
        if (event.type !== 'model_progress') reload();
        if (TERMINAL_EVENT_TYPES.includes(event.type)) callbacks.current.onSettled();
      },
      onLive: (event) => setTimeline((t) => applyLive(t, event)),
      onUnavailable: setUnavailable,
    });
  }, [messageId, reload, callbacks, imported]);

  // The turn just asked takes the focus; the one a link names comes into view.
  useEffect(() => {
    if (!messageId || !ref.current) return;
    if (claimFocus(messageId)) ref.current.focus();
    else if (scrollTo) ref.current.scrollIntoView?.({ block: 'start' });
  }, [messageId, scrollTo]);

  const finished = timeline.finished;
  // The stream says `error` where the API says `failed`: one word for it, as in the sidebar.
  const status = (finished === 'error' ? 'failed' : finished) ?? view?.status ?? 'connecting';
  const active = view !== null && finished === null && isActiveStatus(view.status);
  const complete = finished === 'complete' || (finished === null && view?.status === 'complete');
  const calls = timeline.stages.reduce((n, s) => n + s.participants.length, 0);
  const questionId = `turn-${messageId ?? index}-question`;
  const errorText = timeline.error ?? view?.error ?? null;
  const permalink = messageId && (
    <a className="permalink" href={`#/m/${messageId}`} aria-label={`Link to turn ${index + 1}`}>
      #{index + 1}
    </a>
  );
  const shell = (meta: ReactNode, body: ReactNode) => (
    <li
      className={imported ? 'turn turn-imported' : 'turn'}
      ref={ref}
      tabIndex={-1}
      data-message-id={messageId ?? undefined}
      data-status={imported ? 'imported' : (view?.status ?? 'loading')}
      aria-labelledby={questionId}
    >
      <TurnQuestion turn={turn} mode={mode} view={view} id={questionId} />
      <div className="turn-meta">
        {meta}
        {permalink}
      </div>
      {body}
    </li>
  );
  if (imported) {
    return shell(
      <span className="badge">earlier turn</span>,
      <section className="imported-answer" aria-label={`answer to turn ${index + 1}`}>
        <p className="muted">Brought in with the conversation&apos;s history: not deliberated here.</p>
        <Markdown text={turn.answer} />
      </section>,
    );
  }
  return shell(
    <>
      <span className={`badge status status-${status}`} data-testid="status">
        {status}
      </span>
      {view?.simulated && <span className="badge badge-sim">simulated</span>}
      {view && (
        <small className="muted">
          {view.usage.promptTokens + view.usage.completionTokens} tokens · ${view.usage.costUsd.toFixed(4)}
        </small>
      )}
    </>,
    <>
      {/* Who is missing, above everything else the turn shows. */}
      {view?.degraded && <DegradedNotice degraded={view.degraded} />}
      {view && <RunBar view={view} active={active} endedAt={timeline.endedAt} onStopped={setOwn} />}
      {unavailable !== null && (
        <p className="muted unavailable" role="status">
          {retryingNote(unavailable)}
        </p>
      )}
      {/* Until complete, and when it stopped short, the calls show each answer (a stopped call's text as
          far as it got too); once complete the result does. */}
      {/* A stage interrupted by a fault (a worker stopped, the queue was lost) runs again: said, not silent. */}
      {finished === null && timeline.resumed && (
        <p className="muted resumed" role="status">
          {timeline.resumed}
        </p>
      )}
      {!complete && <Timeline timeline={timeline} showAnswers />}
      {(finished === 'error' || (finished === null && view?.status === 'failed')) && (
        <p className="error" role="alert">
          {errorText}
        </p>
      )}
      {finished === 'cancelled' && (
        <p className="cancelled" role="status">
          {calls > 0
            ? `Stopped before the end: ${timeline.error ?? ''} The answers that had arrived are kept above.`
            : `Stopped before it started: ${timeline.error ?? ''}`}
        </p>
      )}
      {view?.partial && <KeptStage partial={view.partial} />}
      {view && <ResultBody view={view} events={timeline.events} config={turn.config} />}
      {/* A graded deliberation (issue 37): each answer's stored grade, once the run has ended. */}
      {view?.grades && !active && <GradesPanel grades={view.grades} />}
      {complete && calls > 0 && (
        <details className="calls">
          <summary>{calls} model calls, stage by stage</summary>
          <Timeline timeline={timeline} showAnswers={false} />
        </details>
      )}
    </>,
  );
}

/** Deleting, once confirmed: the question stays open until the user answers it. */
function DeleteConversation({ id, turns, onDeleted }: { id: string; turns: number; onDeleted: () => void }) {
  const [asking, setAsking] = useState(false);
  const [busy, setBusy] = useState(false);
  const [failure, setFailure] = useState<string | null>(null);
  const cancel = useRef<HTMLButtonElement>(null);
  const opener = useRef<HTMLButtonElement>(null);
  const wasAsking = useRef(false);
  useEffect(() => {
    if (asking) cancel.current?.focus();
    else if (wasAsking.current) opener.current?.focus();
    wasAsking.current = asking;
  }, [asking]);
  if (!asking) {
    return (
      <button type="button" className="danger delete" ref={opener} onClick={() => setAsking(true)}>
        Delete conversation
      </button>
    );
  }
  const confirm = async () => {
    setBusy(true);
    setFailure(null);
    try {
      await deleteConversation(id);
      onDeleted();
    } catch (error) {
      if (error instanceof ApiFailure && error.status === 404) onDeleted();
      else setFailure('Could not delete it: the server did not answer. Nothing was deleted.');
      setBusy(false);
    }
  };
  return (
    <div
      className="confirm"
      role="alertdialog"
      aria-labelledby={`confirm-${id}`}
      onKeyDown={(e) => e.key === 'Escape' && setAsking(false)}
    >
      <p id={`confirm-${id}`}>
        Delete this conversation and its {turns === 1 ? 'turn' : `${turns} turns`}? This cannot be undone.
      </p>
      <button type="button" className="danger confirm-delete" disabled={busy} onClick={() => void confirm()}>
        {busy ? 'Deleting…' : 'Delete'}
      </button>{' '}
      <button type="button" className="secondary" ref={cancel} onClick={() => setAsking(false)}>
        Cancel
      </button>
      {failure && (
        <p className="error" role="alert">
          {failure}
        </p>
      )}
    </div>
  );
}

let modesOnce: Promise<ModeDescription[]> | null = null;
const modeDescriptions = (): Promise<ModeDescription[]> =>
  (modesOnce ??= getModes().catch((error: unknown) => {
    modesOnce = null;
    throw error;
  }));

export interface ThreadProps {
  conversationId: string;
  /** The turn a `#/m/<id>` link names. */
  messageId?: string;
  /** Something the sidebar shows changed (a title, a status, a new turn). */
  onChanged: () => void;
  onDeleted: () => void;
}

/** A conversation as a thread: each turn's question then its result, newest last, then the input. */
export function Thread({ conversationId, messageId, onChanged, onDeleted }: ThreadProps) {
  const [detail, setDetail] = useState<ConversationDetail | null>(null);
  const [state, setState] = useState<'loading' | 'ready' | 'missing' | 'failed'>('loading');
  const [modes, setModes] = useState<ModeDescription[]>([]);
  const load = useCallback(
    () =>
      getConversation(conversationId).then(
        (found) => {
          setDetail(found);
          setState('ready');
        },
        (error: unknown) =>
          setState((now) =>
            error instanceof ApiFailure && error.status === 404
              ? 'missing'
              : now === 'ready'
                ? now
                : 'failed',
          ),
      ),
    [conversationId],
  );
  useEffect(() => void load(), [load]);
  useEffect(() => void modeDescriptions().then(setModes, () => undefined), []);

  // A turn started after the thread loaded: read the conversation again (once per turn named).
  const asked = useRef<string | null>(null);
  useEffect(() => {
    if (!messageId || !detail || asked.current === messageId) return;
    if (detail.messages.some((m) => m.id === messageId)) return;
    asked.current = messageId;
    void load();
  }, [messageId, detail, load]);

  const changed = useLatest(onChanged);
  const onSettled = useCallback(() => {
    void load();
    changed.current();
  }, [load, changed]);

  const turns = useMemo(() => (detail ? turnsOf(detail) : []), [detail]);
  if (state === 'missing') return <NotFound what="conversation" />;
  if (state === 'failed') return <LoadFailed onRetry={() => (setState('loading'), void load())} />;
  if (!detail) {
    return (
      <p className="loading muted" role="status">
        Loading…
      </p>
    );
  }
  const description = modes.find((m) => m.mode === detail.mode);
  const last = turns[turns.length - 1];
  const lastOpen = last !== undefined && !isTerminal(last.status);
  return (
    <div className="conversation thread" data-conversation-id={detail.id}>
      <header className="thread-head">
        <h2>{displayTitle({ title: detail.title, question: turns[0]?.question })}</h2>
        <span className="badge">{detail.mode}</span>
        {detail.batchId && (
          <a href={`#/batches/${detail.batchId}`} className="batch-link">
            Item of a batch
          </a>
        )}
        <DeleteConversation id={detail.id} turns={turns.length} onDeleted={onDeleted} />
      </header>
      <ol className="turns" aria-label="turns">
        {turns.map((turn, i) => (
          <TurnView
            key={turn.messageId ?? `turn-${turn.turn}`}
            turn={turn}
            mode={detail.mode}
            index={i}
            scrollTo={turns.length > 1 && turn.messageId === messageId}
            onSettled={onSettled}
            onTitle={onSettled}
          />
        ))}
      </ol>
      {description?.multiTurn ? (
        <NewDeliberation
          key={last?.messageId ?? 'first'}
          conversationId={detail.id}
          mode={detail.mode}
          previousConfig={last?.config ?? null}
          waitReason={lastOpen ? 'You can ask a follow-up once this turn has finished.' : null}
          onStarted={() => changed.current()}
        />
      ) : (
        description && (
          <p className="muted single-turn">
            A {detail.mode} deliberation has one turn. <a href="#/new">Start a new deliberation</a>
          </p>
        )
      )}
    </div>
  );
}

export interface ThreadRouteProps {
  route: 'c' | 'm';
  id: string;
  /** The conversation shown, for the sidebar to mark. */
  onActive: (conversationId: string | null) => void;
  onChanged: () => void;
  onDeleted: () => void;
}

/** `#/c/<conversation>` or `#/m/<deliberation>`: the conversation's thread, at that turn. */
export default function ThreadRoute({ route, id, onActive, onChanged, onDeleted }: ThreadRouteProps) {
  const [resolved, setResolved] = useState<{
    messageId: string;
    conversationId: string | null;
    failure: string | null;
  }>();
  const known = route === 'c' ? id : (conversationOfStarted(id) ?? null);
  const conversationId = known ?? (resolved?.messageId === id ? resolved.conversationId : null);
  const failure = !known && resolved?.messageId === id ? resolved.failure : null;
  const [attempt, setAttempt] = useState(0);
  useEffect(() => {
    if (known) return;
    let live = true;
    getDeliberation(id).then(
      (view) => live && setResolved({ messageId: id, conversationId: view.conversationId, failure: null }),
      (error: unknown) =>
        live &&
        setResolved({
          messageId: id,
          conversationId: null,
          failure: error instanceof ApiFailure && error.status === 404 ? 'missing' : 'failed',
        }),
    );
    return () => {
      live = false;
    };
  }, [known, id, attempt]);
  useEffect(() => onActive(conversationId), [conversationId, onActive]);
  if (failure === 'missing') return <NotFound what="deliberation" />;
  if (failure) return <LoadFailed onRetry={() => setAttempt((n) => n + 1)} />;
  if (!conversationId) {
    return (
      <p className="loading muted" role="status">
        Loading…
      </p>
    );
  }
  return (
    <Thread
      key={conversationId}
      conversationId={conversationId}
      messageId={route === 'm' ? id : undefined}
      onChanged={onChanged}
      onDeleted={onDeleted}
    />
  );
}
