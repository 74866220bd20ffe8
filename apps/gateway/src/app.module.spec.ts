import type { DynamicModule, Type } from '@nestjs/common';
import { GUARDS_METADATA, MODULE_METADATA } from '@nestjs/common/constants';
import { loadConfig } from '@conclave/config';
import { AppModule } from './app.module';
import { AuthModule } from './auth/auth.module';
import { ApiKeyGuard } from './auth/auth.guard';
import { CoreModule } from './core/core.module';

type Imported = Type | DynamicModule;

const classOf = (module: Imported): Type => ('module' in module ? module.module : module);

/** A module's own metadata and, for a dynamic one, what `register`/`forRoot` added. */
function metadataOf(module: Imported, key: 'imports' | 'controllers' | 'providers'): unknown[] {
  const declared = (Reflect.getMetadata(
    MODULE_METADATA[key.toUpperCase() as keyof typeof MODULE_METADATA],
    classOf(module),
  ) ?? []) as unknown[];
  return 'module' in module ? [...declared, ...((module[key] as unknown[] | undefined) ?? [])] : declared;
}

/** Every module the gateway imports (the platform's and Nest's too), each once. */
function modulesOf(root: DynamicModule): Imported[] {
  const seen = new Set<Imported>();
  const visit = (module: Imported) => {
    if (seen.has(module)) return;
    seen.add(module);
    for (const child of metadataOf(module, 'imports')) visit(child as Imported);
  };
  visit(root);
  return [...seen];
}

const guardsOf = (controller: Type): unknown[] => [
  ...((Reflect.getMetadata(GUARDS_METADATA, controller) ?? []) as unknown[]),
  ...Object.getOwnPropertyNames(controller.prototype).flatMap(
    (name) => (Reflect.getMetadata(GUARDS_METADATA, controller.prototype[name]) ?? []) as unknown[],
  ),
];

describe('the gateway as feature modules', () => {
  const root = AppModule.register(loadConfig({ AUTH_MODE: 'none' }));
  const modules = modulesOf(root);

  it('has AppModule only import: CoreModule first, then the features', () => {
    expect(root.controllers ?? []).toEqual([]);
    expect(root.providers ?? []).toEqual([]);
    expect(classOf(root.imports![0] as Imported)).toBe(CoreModule);
    expect(root.imports!.length).toBeGreaterThan(10);
  });

  it('declares every controller in exactly one module', () => {
    const declared = modules.flatMap((module) => metadataOf(module, 'controllers') as Type[]);
    expect(declared.map((c) => c.name).sort()).toEqual(
      [
        'AdminWorkController',
        'BatchesController',
        'BudgetsController',
        'ConversationsController',
        'DeliberationsController',
        'HealthController',
        'McpController',
        'ModelsController',
        'ModesController',
        'OpenAiController',
        'PresetsController',
        'ProbesController',
      ].sort(),
    );
  });

  it('imports AuthModule wherever a controller is guarded by ApiKeyGuard (Nest builds the guard there)', () => {
    let checked = 0;
    for (const module of modules) {
      const guarded = (metadataOf(module, 'controllers') as Type[]).filter((c) =>
        guardsOf(c).includes(ApiKeyGuard),
      );
      if (guarded.length === 0) continue;
      checked++;
      expect([
        classOf(module).name,
        metadataOf(module, 'imports').map((m) => classOf(m as Imported)),
      ]).toEqual([classOf(module).name, expect.arrayContaining([AuthModule])]);
    }
    // Deliberations, batches, budgets, ops, models, presets, MCP, /v1.
    expect(checked).toBe(8);
  });

  it('provides each of its own stateful services once (one rate limiter, one hub of each kind)', () => {
    const provided = modules
      .filter((module) => classOf(module).name !== 'PresetsModule')
      .flatMap((module) => metadataOf(module, 'providers'))
      .filter((p): p is Type => typeof p === 'function')
      .map((p) => p.name);
    for (const name of [
      'RateLimiter',
      'EventHub',
      'LiveHub',
      'StreamRegistry',
      'BatchHub',
      'DeliberationsService',
      'CancelService',
    ])
      expect([name, provided.filter((p) => p === name).length]).toEqual([name, 1]);
  });
});
