import { Inject, Injectable, Logger, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import type { ConclaveConfig } from '@conclave/config';
import { batchesChannel, type BatchView } from '@conclave/contracts';
import type { RedisClient } from '@conclave/redis';
import { CONFIG } from '@conclave/platform';
import { BatchesService } from './batches.service';
import { openSubscriber } from '../events/subscriber';

type Listener = (event: 'batch_progress' | 'batch_complete', view: BatchView) => void;

const THROTTLE_MS = 300;

/**
 * Workers say on a Redis channel that a batch moved; this sends each subscriber a fresh snapshot,
 * at most a few per second per batch, and `batch_complete` once it has finished.
 */
@Injectable()
export class BatchHub implements OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger('batches');
  private readonly listeners = new Map<string, Set<Listener>>();
  private readonly pending = new Map<string, NodeJS.Timeout>();
  private subscriber: RedisClient | null = null;

  constructor(
    @Inject(CONFIG) private readonly config: ConclaveConfig,
    private readonly batches: BatchesService,
  ) {}

  async onModuleInit(): Promise<void> {
    this.subscriber = openSubscriber(this.config, this.logger);
    this.subscriber.on('message', (_channel: string, batchId: string) => this.schedule(batchId));
    await this.subscriber.subscribe(batchesChannel(this.config.redisPrefix));
  }

  async onModuleDestroy(): Promise<void> {
    for (const timer of this.pending.values()) clearTimeout(timer);
    this.subscriber?.disconnect();
  }

  subscribe(batchId: string, listener: Listener): () => void {
    const set = this.listeners.get(batchId) ?? new Set<Listener>();
    set.add(listener);
    this.listeners.set(batchId, set);
    void this.send(batchId, new Set([listener]));
    return () => {
      set.delete(listener);
      if (set.size === 0) this.listeners.delete(batchId);
    };
  }

  private schedule(batchId: string): void {
    if (!this.listeners.has(batchId) || this.pending.has(batchId)) return;
    this.pending.set(
      batchId,
      setTimeout(() => {
        this.pending.delete(batchId);
        void this.send(batchId, this.listeners.get(batchId));
      }, THROTTLE_MS),
    );
  }

  private async send(batchId: string, listeners: Set<Listener> | undefined): Promise<void> {
    if (!listeners || listeners.size === 0) return;
    try {
      const view = await this.batches.snapshotById(batchId);
      if (!view) return;
      const finished = view.finishedAt !== null;
      for (const listener of listeners) {
        listener('batch_progress', view);
        if (finished) listener('batch_complete', view);
      }
    } catch (error) {
      this.logger.warn(`batch ${batchId} snapshot: ${String(error)}`);
    }
  }
}
