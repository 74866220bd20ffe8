/**
 * Finished batches' reports and comparisons as JSON text, least recently used dropped first, in at
 * most `maxBytes` (counted as two bytes per UTF-16 unit, as V8 may hold them); one gateway's own,
 * not shared between replicas. An answer larger than the whole budget is not kept.
 */
export class ReportCache {
  private readonly entries = new Map<string, string>();
  private bytes = 0;

  constructor(private readonly maxBytes: number) {}

  get(key: string): string | undefined {
    const json = this.entries.get(key);
    if (json === undefined) return undefined;
    // Most recently used last.
    this.entries.delete(key);
    this.entries.set(key, json);
    return json;
  }

  set(key: string, json: string): void {
    const size = json.length * 2;
    this.delete(key);
    if (size > this.maxBytes) return;
    for (const [oldest, text] of this.entries) {
      if (this.bytes + size <= this.maxBytes) break;
      this.entries.delete(oldest);
      this.bytes -= text.length * 2;
    }
    this.entries.set(key, json);
    this.bytes += size;
  }

  private delete(key: string): void {
    const json = this.entries.get(key);
    if (json === undefined) return;
    this.entries.delete(key);
    this.bytes -= json.length * 2;
  }

  get size(): { entries: number; bytes: number } {
    return { entries: this.entries.size, bytes: this.bytes };
  }
}
