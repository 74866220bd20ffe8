import { ModelCallError, type Completion, type CompletionRequest, type ModelProvider } from '@conclave/llm';
import type { Metrics } from './metrics';

/**
 * Records every model call (with its retries) in the metrics; changes nothing about the call.
 * Model ids and provider names are request input: they go through the metrics' bounded labels.
 */
export class ObservedProvider implements ModelProvider {
  readonly name: string;
  readonly key?: string;

  constructor(
    private readonly inner: ModelProvider,
    private readonly metrics: Metrics,
    /** Which provider key serves a model id (e.g. `simulated` for sim/…), for the `provider` label. */
    private readonly providerOf: (model: string) => string,
  ) {
    this.name = inner.name;
    if (inner.key !== undefined) this.key = inner.key;
  }

  async complete(request: CompletionRequest): Promise<Completion> {
    const labels = {
      provider: this.metrics.providerLabel(this.providerOf(request.model)),
      model: this.metrics.modelLabel(request.model),
    };
    const started = performance.now();
    const seconds = () => (performance.now() - started) / 1000;
    try {
      const completion = await this.inner.complete({
        ...request,
        onRetry: (notice) => {
          this.metrics.modelCallRetries.inc(labels);
          return request.onRetry?.(notice);
        },
      });
      this.metrics.modelCallDuration.observe({ ...labels, outcome: 'ok' }, seconds());
      if (completion.usage) {
        this.metrics.tokens.inc({ ...labels, direction: 'prompt' }, completion.usage.promptTokens);
        this.metrics.tokens.inc({ ...labels, direction: 'completion' }, completion.usage.completionTokens);
        if (completion.usage.costUsd) this.metrics.cost.inc(labels, completion.usage.costUsd);
      }
      return completion;
    } catch (error) {
      const kind = error instanceof ModelCallError ? error.kind : 'internal';
      this.metrics.modelCallDuration.observe({ ...labels, outcome: 'error' }, seconds());
      this.metrics.modelCallErrors.inc({ ...labels, kind });
      throw error;
    }
  }
}
