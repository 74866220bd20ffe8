import type { Completion, CompletionRequest, ModelProvider } from './provider';

/**
 * `sim/…` ids always go to the simulator (demos and tests work next to a real provider);
 * every other id goes to the configured real provider, or to the simulator when there is none.
 */
export class RoutingProvider implements ModelProvider {
  readonly name: string;

  constructor(
    private readonly simulated: ModelProvider,
    private readonly real: ModelProvider | null,
  ) {
    this.name = real ? `${real.name}+simulated` : 'simulated';
  }

  complete(request: CompletionRequest): Promise<Completion> {
    const target = request.model.startsWith('sim/') || !this.real ? this.simulated : this.real;
    return target.complete(request);
  }

  isSimulated(model: string): boolean {
    return model.startsWith('sim/') || !this.real;
  }

  /** The key of the provider that serves `model` (PROVIDER_KEYS), or `other` for a provider without one. */
  providerOf(model: string): string {
    const target = this.isSimulated(model) ? this.simulated : this.real;
    return target?.key ?? 'other';
  }
}
