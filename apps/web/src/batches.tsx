import type { BatchAccepted, BatchView } from '@conclave/contracts';
import { useEffect, useState } from 'react';
import { api, ApiFailure, apiKey, connection } from './api';

export function BatchesPage() {
  const [batches, setBatches] = useState<BatchView[]>([]);
  const [file, setFile] = useState<File | null>(null);
  const [mode, setMode] = useState('council');
  const [defaults, setDefaults] = useState('');
  const [concurrency, setConcurrency] = useState('8');
  const [error, setError] = useState<string | null>(null);
  const [watching, setWatching] = useState<BatchView | null>(null);

  const refresh = () => void api<BatchView[]>('GET', '/api/batches').then(setBatches);
  useEffect(refresh, []);

  useEffect(() => {
    if (!watching) return;
    const socket = connection();
    const update = (view: BatchView) => view.batchId === watching.batchId && setWatching(view);
    socket.on('batch_progress', update);
    socket.on('batch_complete', update);
    void socket.emitWithAck('subscribe', { batchId: watching.batchId });
    return () => {
      socket.off('batch_progress', update);
      socket.off('batch_complete', update);
      void socket.emitWithAck('unsubscribe', { batchId: watching.batchId });
    };
  }, [watching?.batchId]);

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
    setWatching(await api<BatchView>('GET', `/api/batches/${body.batchId}`));
    refresh();
  };

  return (
    <section className="batches">
      <h2>Batches</h2>
      <form
        aria-label="upload a batch"
        onSubmit={(e) => {
          e.preventDefault();
          void upload().catch((e: unknown) => setError(e instanceof ApiFailure ? e.message : String(e)));
        }}
      >
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
          <input name="concurrency" value={concurrency} onChange={(e) => setConcurrency(e.target.value)} />
        </label>
        <button type="submit">Upload</button>
        {error && (
          <pre className="field-error" role="alert">
            {error}
          </pre>
        )}
      </form>
      {watching && (
        <BatchProgress
          view={watching}
          onCancel={() =>
            void api<BatchView>('POST', `/api/batches/${watching.batchId}/cancel`).then(setWatching)
          }
        />
      )}
      <ul>
        {batches.map((b) => (
          <li key={b.batchId}>
            <button className="link" onClick={() => setWatching(b)}>
              {b.name ?? b.batchId.slice(0, 8)}
            </button>{' '}
            <span className="badge">{b.status}</span> {b.complete}/{b.total}
          </li>
        ))}
      </ul>
    </section>
  );
}

function BatchProgress({ view, onCancel }: { view: BatchView; onCancel: () => void }) {
  const done = view.complete + view.failed + view.cancelled;
  return (
    <div className="batch-progress" data-status={view.status} data-finished={view.finishedAt ? 'yes' : 'no'}>
      <progress max={view.total} value={done} aria-label="batch progress" />
      <p>
        {view.complete} complete · {view.failed} failed · {view.running} running · {view.queued} queued ·{' '}
        {view.cancelled} cancelled · ${view.usage.costUsd.toFixed(4)}
        {view.etaSeconds !== null && view.etaSeconds > 0 ? ` · about ${view.etaSeconds} s left` : ''}
      </p>
      {!view.finishedAt && view.status !== 'cancelled' && (
        <button className="danger" onClick={onCancel}>
          Cancel
        </button>
      )}
      <a href={`/api/batches/${view.batchId}/results?format=csv`} download>
        Download CSV
      </a>{' '}
      <a href={`/api/batches/${view.batchId}/results?format=jsonl`} download>
        Download JSONL
      </a>
    </div>
  );
}
