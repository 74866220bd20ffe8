import { lazy, Suspense, useCallback, useEffect, useRef, useState } from 'react';
import { ApiFailure, apiKey } from './api';
import {
  conversationOfStarted,
  isActiveStatus,
  listConversations,
  type ConversationSummary,
} from './conversations';
import { handleTabListKey } from './keys';
import { NewDeliberation } from './new-deliberation';
import { ConversationList } from './sidebar';

export { NewDeliberation } from './new-deliberation';

// The first view is the form: the thread (with the result views) and batches load when needed.
const ThreadRoute = lazy(() => import('./thread'));
const BatchesPage = lazy(() => import('./batches').then((m) => ({ default: m.BatchesPage })));
const ReportPage = lazy(() => import('./report'));
const ComparePage = lazy(() => import('./compare'));

/** `#/batches/<id>/report` → the batch's id. */
const reportOf = (hash: string): string | null =>
  /^#\/batches\/([\w-]+)\/report(?:[/?]|$)/.exec(hash)?.[1] ?? null;
/** `#/compare?a=…&b=…` → the two batches. */
const compareOf = (hash: string) => {
  const query = new URLSearchParams(hash.split('?')[1] ?? '');
  return { a: query.get('a') ?? '', b: query.get('b') ?? '' };
};

/** How often the list is read again while one of its conversations is still deliberating. */
export const LIST_POLL_MS = 3000;

function useHash(): string {
  const [hash, setHash] = useState(location.hash);
  useEffect(() => {
    const onChange = () => setHash(location.hash);
    addEventListener('hashchange', onChange);
    return () => removeEventListener('hashchange', onChange);
  }, []);
  return hash;
}

/** The route of a hash: `#/c/<id>` → ['c', id]. */
export function routeOf(hash: string): { route: string; id: string } {
  const [, route = '', id = ''] = /^#\/(\w+)\/?([\w-]*)/.exec(hash) ?? [];
  return { route, id };
}

export function App() {
  const hash = useHash();
  const { route, id } = routeOf(hash);
  const [conversations, setConversations] = useState<ConversationSummary[]>([]);
  const [needsKey, setNeedsKey] = useState(false);
  const [threadConversation, setThreadConversation] = useState<string | null>(null);
  const [drawerOpen, setDrawerOpen] = useState(false);
  const menuButton = useRef<HTMLButtonElement>(null);
  const drawer = useRef<HTMLElement>(null);
  const main = useRef<HTMLElement>(null);

  const refresh = useCallback(() => {
    listConversations().then(setConversations, (e: unknown) => {
      if (e instanceof ApiFailure && e.status === 401) setNeedsKey(true);
    });
  }, []);
  useEffect(refresh, [refresh, hash]);

  // Titles and statuses of conversations still deliberating (here, in a batch or elsewhere) move on.
  const anyActive = conversations.some((c) => isActiveStatus(c.lastStatus));
  useEffect(() => {
    if (!anyActive) return;
    const timer = setInterval(refresh, LIST_POLL_MS);
    return () => clearInterval(timer);
  }, [anyActive, refresh]);

  // Arrow keys, Home and End in every tab list of the page.
  useEffect(() => {
    const onKey = (event: KeyboardEvent) => void handleTabListKey(event);
    document.addEventListener('keydown', onKey);
    return () => document.removeEventListener('keydown', onKey);
  }, []);

  // The drawer closes when the page changes; the focus, left on a link now hidden, goes to the page.
  const drawerWasOpen = useRef(false);
  drawerWasOpen.current = drawerOpen;
  useEffect(() => {
    if (!drawerWasOpen.current) return;
    setDrawerOpen(false);
    main.current?.focus({ preventScroll: true });
  }, [hash]);
  useEffect(() => {
    if (!drawerOpen) return;
    drawer.current?.querySelector<HTMLElement>('a, button')?.focus();
    const onKey = (event: KeyboardEvent) => {
      if (event.key !== 'Escape') return;
      setDrawerOpen(false);
      menuButton.current?.focus();
    };
    document.addEventListener('keydown', onKey);
    return () => document.removeEventListener('keydown', onKey);
  }, [drawerOpen]);

  const onDeleted = useCallback(() => {
    refresh();
    location.hash = '#/new';
  }, [refresh]);

  const inThread = (route === 'c' || route === 'm') && id !== '';
  const activeConversation =
    route === 'c' ? id : route === 'm' ? (conversationOfStarted(id) ?? threadConversation) : null;
  const activeBatch = route === 'batches' && id ? id : null;

  return (
    <div className={drawerOpen ? 'app drawer-open' : 'app'}>
      <a
        className="skip-link"
        href="#main"
        onClick={(e) => {
          e.preventDefault();
          main.current?.focus();
        }}
      >
        Skip to content
      </a>
      <header className="topbar">
        <button
          type="button"
          className="menu-button"
          ref={menuButton}
          aria-expanded={drawerOpen}
          aria-controls="sidebar"
          onClick={() => setDrawerOpen((open) => !open)}
        >
          <span aria-hidden="true">☰</span> Menu
        </button>
        <a className="brand" href="#/new">
          Conclave
        </a>
      </header>
      <div className="layout">
        <nav
          id="sidebar"
          className="sidebar"
          aria-label="conversations"
          ref={drawer}
          data-open={drawerOpen ? 'yes' : 'no'}
        >
          <h1>
            <a href="#/new">Conclave</a>
          </h1>
          <button
            type="button"
            className="secondary close-drawer"
            onClick={() => (setDrawerOpen(false), menuButton.current?.focus())}
          >
            Close menu
          </button>
          <a
            className="button"
            href="#/new"
            aria-current={route === 'new' || route === '' ? 'page' : undefined}
          >
            New deliberation
          </a>
          <a
            className="button secondary"
            href="#/batches"
            aria-current={route === 'batches' && !id ? 'page' : undefined}
          >
            Batches
          </a>
          {needsKey && <KeyForm />}
          <ConversationList
            conversations={conversations}
            activeConversation={activeConversation}
            activeBatch={activeBatch}
          />
        </nav>
        {drawerOpen && <div className="scrim" aria-hidden="true" onClick={() => setDrawerOpen(false)} />}
        <main id="main" ref={main} tabIndex={-1}>
          <Suspense
            fallback={
              <p className="loading muted" role="status">
                Loading…
              </p>
            }
          >
            {inThread ? (
              <ThreadRoute
                route={route as 'c' | 'm'}
                id={id}
                onActive={setThreadConversation}
                onChanged={refresh}
                onDeleted={onDeleted}
              />
            ) : reportOf(hash) ? (
              <ReportPage batchId={reportOf(hash) ?? ''} />
            ) : route === 'compare' ? (
              <ComparePage {...compareOf(hash)} />
            ) : route === 'batches' ? (
              <BatchesPage
                batchId={id || null}
                items={id ? conversations.filter((c) => c.batchId === id) : []}
              />
            ) : (
              <NewDeliberation onStarted={refresh} />
            )}
          </Suspense>
        </main>
      </div>
    </div>
  );
}

function KeyForm() {
  const [key, setKey] = useState(apiKey.get());
  return (
    <form
      className="key-form"
      onSubmit={(e) => {
        e.preventDefault();
        apiKey.set(key.trim());
        location.reload();
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
