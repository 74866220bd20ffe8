import type { DeliberationView, ModeDescription, ModeName } from '@conclave/contracts';
import { useCallback, useEffect, useMemo, useState } from 'react';
import { api, ApiFailure, apiKey, follow, getDeliberation, getModes, startDeliberation } from './api';
import { BatchesPage } from './batches';
import { applyEvent, emptyTimeline, type TimelineState } from './timeline';
import { CouncilView } from './views/council';
import { DebateView } from './views/debate';
import { DelphiView } from './views/delphi';
import { JuryView } from './views/jury';
import { VoteView } from './views/vote';

const DESCRIPTIONS: Record<ModeName, string> = {
  council: 'All models answer, rank each other anonymously, a chairman synthesizes.',
  vote: 'All models answer, then vote for the best answer; a chairman breaks ties.',
  jury: 'Jurors score existing content on five dimensions and give verdicts; a foreman reports.',
  debate: 'Models answer, see the others anonymized, revise, stand or merge, then vote.',
  delphi: 'Anonymous estimation rounds with statistics until the panel converges.',
};

const MODEL_ID = /^[a-z0-9][a-z0-9._-]*\/[A-Za-z0-9][A-Za-z0-9._:@+\-/]*$/;

function useHash(): string {
  const [hash, setHash] = useState(location.hash);
  useEffect(() => {
    const onChange = () => setHash(location.hash);
    addEventListener('hashchange', onChange);
    return () => removeEventListener('hashchange', onChange);
  }, []);
  return hash;
}

interface Conversation {
  id: string;
  title: string | null;
  mode: ModeName;
  lastStatus: string | null;
}

export function App() {
  const hash = useHash();
  const [conversations, setConversations] = useState<Conversation[]>([]);
  const [needsKey, setNeedsKey] = useState(false);
  const refresh = useCallback(() => {
    api<Conversation[]>('GET', '/api/conversations')
      .then(setConversations)
      .catch((e: unknown) => e instanceof ApiFailure && e.status === 401 && setNeedsKey(true));
  }, []);
  useEffect(refresh, [refresh, hash]);

  const [, route, id] = /^#\/(\w+)\/?([\w-]*)/.exec(hash) ?? [];
  return (
    <div className="layout">
      <nav className="sidebar" aria-label="conversations">
        <h1>
          <a href="#/new">Conclave</a>
        </h1>
        <a className="button" href="#/new">
          New deliberation
        </a>
        <a className="button secondary" href="#/batches">
          Batches
        </a>
        {needsKey && <KeyForm onSaved={() => (setNeedsKey(false), refresh())} />}
        <ul>
          {conversations.map((c) => (
            <li key={c.id}>
              <a href={`#/c/${c.id}`}>
                <span className="badge">{c.mode}</span> {c.title ?? 'Untitled'}
              </a>
            </li>
          ))}
        </ul>
      </nav>
      <main>
        {route === 'm' && id ? (
          <MessagePage messageId={id} key={id} />
        ) : route === 'c' && id ? (
          <ConversationPage conversationId={id} key={id} onDeleted={refresh} />
        ) : route === 'batches' ? (
          <BatchesPage />
        ) : (
          <NewDeliberation />
        )}
      </main>
    </div>
  );
}

function KeyForm({ onSaved }: { onSaved: () => void }) {
  const [key, setKey] = useState(apiKey.get());
  return (
    <form
      className="key-form"
      onSubmit={(e) => {
        e.preventDefault();
        apiKey.set(key.trim());
        location.reload();
        onSaved();
      }}
    >
      <label>
        API key
        <input value={key} onChange={(e) => setKey(e.target.value)} placeholder="ck_…" />
      </label>
      <button type="submit">Save</button>
    </form>
  );
}

type Fields = Record<string, string>;

function setPath(target: Record<string, unknown>, path: string, value: unknown) {
  const [head, ...rest] = path.split('.');
  if (rest.length === 0) target[head] = value;
  else setPath((target[head] ??= {}) as Record<string, unknown>, rest.join('.'), value);
}

export function NewDeliberation({ conversationId }: { conversationId?: string }) {
  const [modes, setModes] = useState<ModeDescription[]>([]);
  const [mode, setMode] = useState<ModeName>('council');
  const [question, setQuestion] = useState('');
  const [content, setContent] = useState('');
  const [originalQuestion, setOriginalQuestion] = useState('');
  const [roster, setRoster] = useState<Record<string, string>>({});
  const [options, setOptions] = useState<Record<string, string>>({});
  const [errors, setErrors] = useState<Fields>({});
  const [busy, setBusy] = useState(false);
  useEffect(() => void getModes().then(setModes), []);
  const description = modes.find((m) => m.mode === mode);

  const check = (): Fields => {
    const found: Fields = {};
    if (mode !== 'jury' && !question.trim()) found.question = 'Question is required';
    if (mode === 'jury' && !content.trim()) found['modeConfig.content'] = 'Content to evaluate is required';
    const lists: Record<string, string[]> = {};
    for (const role of description?.roster ?? []) {
      const raw = roster[role.field]?.trim();
      if (!raw) continue;
      const models = raw.split(/[\s,]+/).filter(Boolean);
      lists[role.field] = models;
      const bad = models.find((m) => !MODEL_ID.test(m));
      if (bad) found[role.field] = `"${bad}" is not a model id of the form provider/name`;
      else if (role.max > 1 && (models.length < role.min || models.length > role.max)) {
        found[role.field] = `${role.role} needs ${role.min} to ${role.max} models (got ${models.length})`;
      } else if (role.max === 1 && models.length > 1) found[role.field] = `one ${role.role} model`;
    }
    const single = (field: string) => lists[field]?.[0];
    if (
      mode === 'jury' &&
      single('modeConfig.foremanModel') &&
      lists['modeConfig.jurorModels']?.includes(single('modeConfig.foremanModel') ?? '')
    ) {
      found['modeConfig.foremanModel'] = 'Foreman model must not be one of the juror models';
    }
    if (
      mode === 'delphi' &&
      single('modeConfig.facilitatorModel') &&
      lists['modeConfig.panelistModels']?.includes(single('modeConfig.facilitatorModel') ?? '')
    ) {
      found['modeConfig.facilitatorModel'] = 'The facilitator does NOT participate as a panelist';
    }
    return found;
  };

  const submit = async () => {
    const found = check();
    setErrors(found);
    if (Object.keys(found).length > 0) return;
    const request: Record<string, unknown> = {
      question: mode === 'jury' ? question.trim() || 'Evaluate this content' : question,
      mode,
    };
    if (conversationId) request.conversationId = conversationId;
    for (const role of description?.roster ?? []) {
      const raw = roster[role.field]?.trim();
      if (!raw) continue;
      const models = raw.split(/[\s,]+/).filter(Boolean);
      setPath(request, role.field, role.max === 1 ? models[0] : models);
    }
    if (mode === 'jury') {
      setPath(request, 'modeConfig.content', content);
      if (originalQuestion.trim()) setPath(request, 'modeConfig.originalQuestion', originalQuestion);
    }
    for (const [field, value] of Object.entries(options)) {
      if (value.trim() === '') continue;
      const n = Number(value);
      setPath(request, `modeConfig.${field}`, Number.isNaN(n) ? value : n);
    }
    setBusy(true);
    try {
      const accepted = await startDeliberation(request);
      location.hash = `#/m/${accepted.messageId}`;
    } catch (e) {
      if (e instanceof ApiFailure) setErrors(e.body.fields ?? { form: e.body.message });
    } finally {
      setBusy(false);
    }
  };

  const error = (field: string) =>
    errors[field] ? (
      <span className="field-error" role="alert" data-field={field}>
        {errors[field]}
      </span>
    ) : null;

  return (
    <form
      className="new-deliberation"
      aria-label="new deliberation"
      onSubmit={(e) => {
        e.preventDefault();
        void submit();
      }}
    >
      {!conversationId && (
        <fieldset className="modes">
          <legend>Mode</legend>
          {modes.map((m) => (
            <label key={m.mode} className={m.mode === mode ? 'mode selected' : 'mode'}>
              <input
                type="radio"
                name="mode"
                value={m.mode}
                checked={m.mode === mode}
                onChange={() => (setMode(m.mode), setErrors({}))}
              />
              <strong>{m.mode}</strong> <span>{DESCRIPTIONS[m.mode]}</span>
            </label>
          ))}
        </fieldset>
      )}
      {mode === 'jury' ? (
        <>
          <label>
            Content to evaluate
            <textarea name="content" value={content} onChange={(e) => setContent(e.target.value)} rows={6} />
            {error('modeConfig.content')}
          </label>
          <label>
            Original question (optional)
            <input
              name="originalQuestion"
              value={originalQuestion}
              onChange={(e) => setOriginalQuestion(e.target.value)}
            />
          </label>
          <label>
            Label for this evaluation
            <input name="question" value={question} onChange={(e) => setQuestion(e.target.value)} />
            {error('question')}
          </label>
        </>
      ) : (
        <label>
          Question
          <textarea name="question" value={question} onChange={(e) => setQuestion(e.target.value)} rows={3} />
          {error('question')}
        </label>
      )}
      {(description?.roster ?? []).map((role) => (
        <label key={role.field}>
          {role.role} {role.max > 1 ? `(${role.min}–${role.max} models, comma-separated)` : '(one model)'}
          <input
            name={role.field}
            value={roster[role.field] ?? ''}
            placeholder={String(
              ((description?.defaults ?? {}) as Record<string, unknown>)[
                role.field.replace('modeConfig.', '')
              ] ?? '',
            )}
            onChange={(e) => setRoster({ ...roster, [role.field]: e.target.value })}
          />
          {error(role.field)}
        </label>
      ))}
      <details>
        <summary>Options</summary>
        {(description?.options ?? [])
          .filter((o) => !['content', 'originalQuestion', 'options', 'questionType'].includes(o.field))
          .map((o) => (
            <label key={o.field}>
              {o.field} <small>{o.description}</small>
              <input
                name={`modeConfig.${o.field}`}
                value={options[o.field] ?? ''}
                placeholder={o.default === undefined ? '' : String(o.default)}
                onChange={(e) => setOptions({ ...options, [o.field]: e.target.value })}
              />
              {error(`modeConfig.${o.field}`)}
            </label>
          ))}
      </details>
      {error('form')}
      {Object.entries(errors)
        .filter(([f]) => !document.querySelector(`[name="${f}"]`) && f !== 'form')
        .map(([f, m]) => (
          <span key={f} className="field-error" role="alert" data-field={f}>
            {f}: {m}
          </span>
        ))}
      <button type="submit" disabled={busy}>
        {conversationId ? 'Ask a follow-up' : 'Deliberate'}
      </button>
    </form>
  );
}

function MessagePage({ messageId }: { messageId: string }) {
  const [timeline, setTimeline] = useState<TimelineState>(emptyTimeline);
  const [view, setView] = useState<DeliberationView | null>(null);
  const [missing, setMissing] = useState(false);
  const load = useCallback(
    () =>
      getDeliberation(messageId).then(
        setView,
        (e: unknown) => e instanceof ApiFailure && e.status === 404 && setMissing(true),
      ),
    [messageId],
  );
  useEffect(() => {
    void load();
    return follow(messageId, (event) => {
      setTimeline((t) => applyEvent(t, event));
      if (event.type !== 'model_progress') void load();
    });
  }, [messageId, load]);
  const body = useMemo(() => {
    if (!view) return null;
    const result = (view.result ?? {}) as never;
    switch (view.mode) {
      case 'council':
        return <CouncilView result={result} />;
      case 'vote':
        return <VoteView result={result} />;
      case 'jury':
        return <JuryView result={result} />;
      case 'debate':
        return <DebateView result={result} />;
      case 'delphi':
        return <DelphiView result={result} events={timeline.events} />;
    }
  }, [view, timeline.events]);
  if (missing) return <p>This deliberation does not exist.</p>;
  return (
    <article className="message" data-status={view?.status ?? 'loading'}>
      <header>
        <h2>
          {view?.mode}{' '}
          <span className="badge" data-testid="status">
            {timeline.finished ?? view?.status ?? 'connecting'}
          </span>
          {view?.simulated && <span className="badge badge-sim">simulated</span>}
        </h2>
        {view && (
          <small>
            {view.usage.promptTokens + view.usage.completionTokens} tokens · ${view.usage.costUsd.toFixed(4)}
          </small>
        )}
      </header>
      <ol className="timeline" aria-label="progress">
        {timeline.stages.map((stage) => (
          <li key={stage.name}>
            <strong>{stage.name}</strong>
            <ul>
              {stage.participants.map((p) => (
                <li key={p.id} className={`call call-${p.state}`} data-participant={p.id}>
                  {p.id}: {p.state}
                  {p.retries > 0 ? ` (retried ${p.retries}×)` : ''}
                  {p.responseTimeMs !== undefined ? ` · ${p.responseTimeMs} ms` : ''}
                  {p.error ? ` · ${p.error}` : ''}
                </li>
              ))}
            </ul>
          </li>
        ))}
      </ol>
      {timeline.error && (
        <p className="error" role="alert">
          {timeline.error}
        </p>
      )}
      {body}
      {view?.mode === 'council' && timeline.finished === 'complete' && (
        <NewDeliberation conversationId={view.conversationId} />
      )}
    </article>
  );
}

interface ConversationDetail {
  id: string;
  title: string | null;
  mode: ModeName;
  messages: { id: string; role: string; turn: number; content: string; status: string }[];
}

function ConversationPage({ conversationId, onDeleted }: { conversationId: string; onDeleted: () => void }) {
  const [conversation, setConversation] = useState<ConversationDetail | null>(null);
  useEffect(
    () => void api<ConversationDetail>('GET', `/api/conversations/${conversationId}`).then(setConversation),
    [conversationId],
  );
  if (!conversation) return null;
  return (
    <section className="conversation">
      <h2>{conversation.title ?? 'Untitled'}</h2>
      <button
        className="danger"
        onClick={() =>
          void api('DELETE', `/api/conversations/${conversationId}`).then(() => {
            onDeleted();
            location.hash = '#/new';
          })
        }
      >
        Delete conversation
      </button>
      <ol>
        {conversation.messages.map((m) =>
          m.role === 'user' ? (
            <li key={m.id} className="question">
              {m.content}
            </li>
          ) : (
            <li key={m.id}>
              <a href={`#/m/${m.id}`}>Open the deliberation</a> <span className="badge">{m.status}</span>
            </li>
          ),
        )}
      </ol>
    </section>
  );
}
