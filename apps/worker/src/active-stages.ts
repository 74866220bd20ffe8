import { Injectable } from '@nestjs/common';
import { stageLeaseKey } from '@conclave/redis';

/** The stage jobs this worker process is running now (stageLeaseKey), for its lease (Recovery). */
@Injectable()
export class ActiveStages {
  private readonly running = new Map<string, number>();

  add(messageId: string, stage: string): void {
    const key = stageLeaseKey(messageId, stage);
    this.running.set(key, (this.running.get(key) ?? 0) + 1);
  }

  delete(messageId: string, stage: string): void {
    const key = stageLeaseKey(messageId, stage);
    const n = (this.running.get(key) ?? 0) - 1;
    if (n > 0) this.running.set(key, n);
    else this.running.delete(key);
  }

  has(messageId: string, stage: string): boolean {
    return this.running.has(stageLeaseKey(messageId, stage));
  }

  /** Whether any stage of the deliberation runs here. */
  hasMessage(messageId: string): boolean {
    for (const key of this.running.keys()) if (key.startsWith(`${messageId}:`)) return true;
    return false;
  }

  keys(): string[] {
    return [...this.running.keys()];
  }
}
