import type { Usage } from '@conclave/contracts';
import type { DataSource } from 'typeorm';

interface UsageRecord {
  prompt: string | null;
  completion: string | null;
  cost: string | null;
}

/** SUM() of bigint and numeric columns arrives as a string, or null when nothing was summed. */
const toUsage = (row: UsageRecord | undefined): Usage => ({
  promptTokens: Number(row?.prompt ?? 0),
  completionTokens: Number(row?.completion ?? 0),
  costUsd: Number(row?.cost ?? 0),
});

/** Tokens and cost of the model calls made so far, per deliberation or per batch. */
export class UsageRepository {
  constructor(private readonly dataSource: DataSource) {}

  async ofMessage(messageId: string): Promise<Usage> {
    const [row]: UsageRecord[] = await this.dataSource.query(
      `SELECT SUM(prompt_tokens) AS prompt, SUM(completion_tokens) AS completion, SUM(cost_usd) AS cost
       FROM model_calls WHERE message_id = $1`,
      [messageId],
    );
    return toUsage(row);
  }

  async ofBatch(batchId: string): Promise<Usage> {
    const [row]: UsageRecord[] = await this.dataSource.query(
      `SELECT SUM(mc.prompt_tokens) AS prompt, SUM(mc.completion_tokens) AS completion, SUM(mc.cost_usd) AS cost
       FROM model_calls mc JOIN messages m ON m.id = mc.message_id WHERE m.batch_id = $1`,
      [batchId],
    );
    return toUsage(row);
  }
}
