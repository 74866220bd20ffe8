import type { BatchAccepted, BatchView } from '@conclave/contracts';
import { useEffect, useRef, useState } from 'react';
import { api, ApiFailure, apiKey, connection } from './api';
import { ConfirmDelete } from './confirm-delete';
import { ComparePicker, reportPath } from './compare-picker';
import { displayTitle, type ConversationSummary } from './conversations';

const isOpen = (b: BatchView) => !b.finishedAt && b.status !== 'cancelled';

/** A snapshot as the socket sends it (`{ type, ...view }`), as a view. */
function viewOf(snapshot: BatchView & { type?: string }): BatchView {
  const view: BatchView & { type?: string } = { ...snapshot };
  delete view.type;
  return view;
}

/**
 * Follows every batch in `ids` over the socket (`subscribe { batchId }`): each `batch_progress` /
 * `batch_complete` snapshot goes to `onSnapshot`. Subscribes and unsubscribes one batch at a time
 * as the set changes; the server answers a subscription with the batch's snapshot at once.
 */
export function useBatchSnapshots(ids: string[], onSnapshot: (view: BatchView) => void): void {
  const handler = useRef(onSnapshot);
  handler.current = onSnapshot;
  const followed = useRef(new Set<string>());
  const key = [...new Set(ids)].sort().join(',');

  useEffect(() => {
    const socket = connection();
    const update = (snapshot: BatchView & { type?: string }) => {
      if (followed.current.has(snapshot.batchId)) handler.current(viewOf(snapshot));
    };
    const resubscribe = () => {
      for (const batchId of followed.current) void socket.emitWithAck('subscribe', { batchId });
    };
    socket.on('batch_progress', update);
    socket.on('batch_complete', update);
    socket.on('connect', resubscribe);
    const current = followed.current;
    return () => {
      socket.off('batch_progress', update);
      socket.off('batch_complete', update);
      socket.off('connect', resubscribe);
      for (const batchId of current) void socket.emitWithAck('unsubscribe', { batchId });
      current.clear();
    };
  }, []);

  useEffect(() => {
    const socket = connection();
    const wanted = new Set(key ? key.split(',') : []);
    for (const batchId of followed.current) {
      if (wanted.has(batchId)) continue;
      followed.current.delete(batchId);
      void socket.emitWithAck('unsubscribe', { batchId });
    }
    for (const batchId of wanted) {
      if (followed.current.has(batchId)) continue;
      followed.current.add(batchId);
      if (socket.connected) void socket.emitWithAck('subscribe', { batchId });
    }
  }, [key]);
}

export function BatchesPage({ batchId, items }: { batchId: string | null; items: ConversationSummary[] }) {
  const [batches, setBatches] = useState<BatchView[]>([]);
  const [file, setFile] = useState<File | null>(null);
  const [mode, setMode] = useState('council');
  const [defaults, setDefaults] = useState('');
  const [concurrency, setConcurrency] = useState('8');
  const [error, setError] = useState<string | null>(null);
  const [selected, setSelected] = useState<BatchView | null>(null);
  const [missing, setMissing] = useState(false);
  const [deletedNote, setDeletedNote] = useState<string | null>(null);

  const refresh = () => void api<BatchView[]>('GET', '/api/batches').then(setBatches, () => undefined);
  useEffect(refresh, []);

  useEffect(() => {
    setMissing(false);
    if (batchId) setDeletedNote(null);
    if (!batchId) return setSelected(null);
    let live = true;
    api<BatchView>('GET', `/api/batches/${encodeURIComponent(batchId)}`).then(
      (view) => live && setSelected(view),
      (e: unknown) => live && e instanceof ApiFailure && e.status === 404 && setMissing(true),
    );
    return () => {
      live = false;
    };
  }, [batchId]);

  // Every batch still running moves on in the list (and on its page) as its snapshots arrive.
  const open = batches.filter(isOpen).map((b) => b.batchId);
  if (selected && isOpen(selected)) open.push(selected.batchId);
  useBatchSnapshots(open, (view) => {
    setBatches((list) => list.map((b) => (b.batchId === view.batchId ? view : b)));
    setSelected((now) => (now?.batchId === view.batchId ? view : now));
  });

  /** Deletes a finished batch with its items; the server refuses (409, with its reason) one that still runs. */
  const remove = async (view: BatchView) => {
    await api<void>('DELETE', `/api/batches/${view.batchId}`);
    setBatches((list) => list.filter((b) => b.batchId !== view.batchId));
    setSelected(null);
    setDeletedNote(
      `Deleted ${view.name ? `batch "${view.name}"` : `batch ${view.batchId.slice(0, 8)}`} and its items.`,
    );
    location.hash = '#/batches';
  };

  const upload = async () => {
    setError(null);
    if (!file) return setError('Choose a JSONL or CSV file');
    const params = new URLSearchParams({ mode, concurrency });
    if (defaults.trim()) params.set('defaults', defaults);
    const headers: Record<string, string> = {
      'content-type': file.name.endsWith('.csv') ? 'text/csv' : 'application/x-ndjson',
    };
    if (apiKey.get()) headers.authorization = `Bearer ${apiKey.get()}`;
    const response = await fetch(`/api/batches?${params}`, {
      method: 'POST',
      headers,
      body: await file.text(),
    });
    const body = (await response.json()) as BatchAccepted & {
      message?: string;
      fields?: Record<string, string>;
    };
    if (!response.ok) {
      const fields = Object.entries(body.fields ?? {})
        .slice(0, 10)
        .map(([f, m]) => `${f}: ${m}`);
      return setError([body.message, ...fields].join('\n'));
    }
    const view = await api<BatchView>('GET', `/api/batches/${body.batchId}`);
    setSelected(view);
    setBatches((list) => [view, ...list.filter((b) => b.batchId !== view.batchId)]);
    location.hash = `#/batches/${body.batchId}`;
  };

  return (
    <section className="batches">
      <h2>Batches</h2>
      {missing && (
        <div className="not-found" data-testid="not-found">
          <h3>Batch not found</h3>
          <p>This batch does not exist: it may have been deleted, or the link is wrong.</p>
        </div>
      )}
      {selected && (
        <BatchProgress
          view={selected}
          items={items}
          onCancel={() =>
            void api<BatchView>('POST', `/api/batches/${selected.batchId}/cancel`).then(setSelected)
          }
          onDelete={() => remove(selected)}
        />
      )}
      <p className="muted batch-deleted" role="status">
        {deletedNote}
      </p>
      {selected && <ComparePicker batchId={selected.batchId} batches={batches} />}
      <form
        aria-label="upload a batch"
        onSubmit={(e) => {
          e.preventDefault();
          void upload().catch((e: unknown) => setError(e instanceof ApiFailure ? e.message : String(e)));
        }}
      >
        <h3>Upload a batch</h3>
        <label>
          File (JSONL: one request per line; CSV: question, content, originalQuestion)
          <input
            type="file"
            name="file"
            accept=".jsonl,.ndjson,.csv"
            onChange={(e) => setFile(e.target.files?.[0] ?? null)}
          />
        </label>
        <label>
          Mode
          <select name="mode" value={mode} onChange={(e) => setMode(e.target.value)}>
            {['council', 'vote', 'jury', 'debate', 'delphi'].map((m) => (
              <option key={m}>{m}</option>
            ))}
          </select>
        </label>
        <label>
          Defaults (JSON, e.g. the roster)
          <textarea name="defaults" rows={3} value={defaults} onChange={(e) => setDefaults(e.target.value)} />
        </label>
        <label>
          Concurrency
          <input
            name="concurrency"
            inputMode="numeric"
            value={concurrency}
            onChange={(e) => setConcurrency(e.target.value)}
          />
        </label>
        <button type="submit">Upload</button>
        {error && (
          <pre className="field-error" role="alert">
            {error}
          </pre>
        )}
      </form>
      <h3>All batches</h3>
      {batches.length === 0 ? (
        <p className="muted">No batches yet.</p>
      ) : (
        <ul className="batch-list">
          {batches.map((b) => (
            <li key={b.batchId} data-batch-id={b.batchId} data-status={b.status}>
              <a href={`#/batches/${b.batchId}`} aria-current={b.batchId === batchId ? 'page' : undefined}>
                {b.name ?? b.batchId.slice(0, 8)}
              </a>{' '}
              <span className={`badge status status-${b.status}`}>{b.status}</span>{' '}
              <span className="batch-count">
                {b.complete}/{b.total}
              </span>
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}

function BatchProgress({
  view,
  items,
  onCancel,
  onDelete,
}: {
  view: BatchView;
  items: ConversationSummary[];
  onCancel: () => void;
  onDelete: () => Promise<void>;
}) {
  const done = view.complete + view.failed + view.cancelled;
  const [confirmingDelete, setConfirmingDelete] = useState(false);
  const [deleteError, setDeleteError] = useState<string | null>(null);
  const confirmDelete = () => {
    setConfirmingDelete(false);
    onDelete().catch((e: unknown) =>
      setDeleteError(
        e instanceof ApiFailure ? e.body.message : 'Could not reach the server. Please try again.',
      ),
    );
  };
  return (
    <div
      className="batch-progress card"
      data-status={view.status}
      data-finished={view.finishedAt ? 'yes' : 'no'}
    >
      <h3>
        {view.name ?? `Batch ${view.batchId.slice(0, 8)}`}{' '}
        <span className={`badge status status-${view.status}`}>{view.status}</span>
      </h3>
      <progress max={view.total} value={done} aria-label="batch progress" />
      <p>
        {view.complete} complete · {view.failed} failed · {view.running} running · {view.queued} queued ·{' '}
        {view.cancelled} cancelled · ${view.usage.costUsd.toFixed(4)}
        {view.etaSeconds !== null && view.etaSeconds > 0 ? ` · about ${view.etaSeconds} s left` : ''}
      </p>
      {(view.maxCostUsd !== null || view.retriedItems > 0) && (
        <p className="batch-budget">
          {view.maxCostUsd !== null &&
            `Budget $${view.maxCostUsd}` +
              (view.status === 'budget_exhausted'
                ? ' reached: the items not yet started were cancelled'
                : '')}
          {view.maxCostUsd !== null && view.retriedItems > 0 && ' · '}
          {view.retriedItems > 0 && `${view.retriedItems} item(s) retried (latest attempts shown)`}
        </p>
      )}
      {!view.finishedAt && view.status !== 'cancelled' && (
        <button className="danger" onClick={onCancel}>
          Cancel
        </button>
      )}
      {view.finishedAt && (
        <ConfirmDelete
          asking={confirmingDelete}
          onAsk={() => (setConfirmingDelete(true), setDeleteError(null))}
          onKeep={() => setConfirmingDelete(false)}
          onConfirm={confirmDelete}
          question={`Delete this batch, its ${view.total === 1 ? 'item' : `${view.total} items`} and all their deliberations?`}
          opener="Delete batch…"
          className="batch-delete"
        />
      )}
      {deleteError && (
        <p className="field-error" role="alert">
          {deleteError}
        </p>
      )}
      <p className="downloads">
        <a href={reportPath(view.batchId)} className="report-link">
          Report
        </a>{' '}
        <a href={`/api/batches/${view.batchId}/results?format=csv`} download>
          Download CSV
        </a>{' '}
        <a href={`/api/batches/${view.batchId}/results?format=jsonl`} download>
          Download JSONL
        </a>
      </p>
      {items.length > 0 && (
        <details className="batch-items">
          <summary>Its items ({items.length})</summary>
          <ul>
            {items.map((c) => (
              <li key={c.id}>
                <a href={`#/c/${c.id}`}>{displayTitle(c)}</a>{' '}
                {c.lastStatus && (
                  <span className={`badge status status-${c.lastStatus}`}>{c.lastStatus}</span>
                )}
              </li>
            ))}
          </ul>
        </details>
      )}
    </div>
  );
}
