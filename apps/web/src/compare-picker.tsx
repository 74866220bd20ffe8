import type { BatchView } from '@conclave/contracts';
import { useEffect, useState } from 'react';
import { api } from './api';

/** The compare page of two batches: `#/compare?a=<a>&b=<b>`. */
export const comparePath = (a: string, b: string): string =>
  `#/compare?${new URLSearchParams({ a, b }).toString()}`;

/** The report page of a batch. */
export const reportPath = (batchId: string): string => `#/batches/${encodeURIComponent(batchId)}/report`;

const nameOf = (b: BatchView) => b.name ?? `Batch ${b.batchId.slice(0, 8)}`;

/**
 * Picks a second batch to compare `batchId` with (the batch list, itself left out). The list is
 * the one given, or read from the API when none is.
 */
export function ComparePicker({ batchId, batches }: { batchId: string; batches?: BatchView[] }) {
  const [fetched, setFetched] = useState<BatchView[] | null>(null);
  const [other, setOther] = useState('');
  useEffect(() => {
    if (batches) return;
    let live = true;
    api<BatchView[]>('GET', '/api/batches').then(
      (list) => live && setFetched(list),
      () => live && setFetched([]),
    );
    return () => {
      live = false;
    };
  }, [batches]);
  const choices = (batches ?? fetched ?? []).filter((b) => b.batchId !== batchId);
  const chosen = choices.some((b) => b.batchId === other) ? other : (choices[0]?.batchId ?? '');
  if (choices.length === 0) return null;
  return (
    <form
      className="compare-picker"
      aria-label="compare with another batch"
      onSubmit={(e) => {
        e.preventDefault();
        if (chosen) location.hash = comparePath(batchId, chosen);
      }}
    >
      <label>
        Compare with
        <select name="compare-with" value={chosen} onChange={(e) => setOther(e.target.value)}>
          {choices.map((b) => (
            <option key={b.batchId} value={b.batchId}>
              {nameOf(b)} ({b.total} items, {b.status})
            </option>
          ))}
        </select>
      </label>
      <button type="submit" className="secondary">
        Compare
      </button>
    </form>
  );
}
