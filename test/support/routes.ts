import type { INestApplication } from '@nestjs/common';
import { ModulesContainer } from '@nestjs/core';
import {
  GATEWAY_METADATA,
  GATEWAY_OPTIONS,
  MESSAGE_MAPPING_METADATA,
  MESSAGE_METADATA,
} from '@nestjs/websockets/constants';

/**
 * What a running gateway serves, read from the application itself (not from a list kept by hand),
 * so that a suite can fail when a route or message is added without a probe of its own.
 */

/** Every route Express registered, as `METHOD /path` (`:param` as declared). */
export function expressRoutes(app: INestApplication): string[] {
  type Layer = { route?: { path: string; methods: Record<string, boolean> } };
  const express = app.getHttpAdapter().getInstance() as { router: { stack: Layer[] } };
  return express.router.stack.flatMap((layer) =>
    layer.route
      ? Object.keys(layer.route.methods)
          .filter((m) => m !== '_all')
          .map((m) => `${m.toUpperCase()} ${layer.route!.path}`)
      : [],
  );
}

/** Every Socket.IO message a gateway handles, as `/namespace message`. */
export function socketMessages(app: INestApplication): string[] {
  const found: string[] = [];
  for (const module of app.get(ModulesContainer).values()) {
    for (const wrapper of module.providers.values()) {
      const type = wrapper.metatype as (new (...args: never[]) => unknown) | null;
      if (typeof type !== 'function' || !Reflect.getMetadata(GATEWAY_METADATA, type)) continue;
      const namespace =
        (Reflect.getMetadata(GATEWAY_OPTIONS, type) as { namespace?: string })?.namespace ?? '/';
      for (let proto = type.prototype as object; proto && proto !== Object.prototype;) {
        for (const name of Object.getOwnPropertyNames(proto)) {
          const handler = Object.getOwnPropertyDescriptor(proto, name)?.value as unknown;
          if (typeof handler === 'function' && Reflect.getMetadata(MESSAGE_MAPPING_METADATA, handler))
            found.push(`${namespace} ${String(Reflect.getMetadata(MESSAGE_METADATA, handler))}`);
        }
        proto = Object.getPrototypeOf(proto) as object;
      }
    }
  }
  return [...new Set(found)];
}

/**
 * Paths mounted on Express outside Nest's router (`app.use`), so not in expressRoutes: the admin
 * dashboard's sign-in and sign-out forms and Bull Board behind its guard (apps/gateway/src/ops/admin.ts).
 * Each is probed by name in the suites; expressRoutes cannot list them.
 */
export const MOUNTED_PATHS = ['/admin/sign-in', '/admin/sign-out', '/admin/queues'] as const;
