import { Module, type INestApplicationContext, type Provider } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';

/**
 * A Nest application context holding only `providers`: a gateway service as Nest builds it
 * (constructor injection, tokens), its collaborators given as fakes of our own repositories
 * (`{ provide: BudgetsRepository, useValue: fake }`). No HTTP server, no PostgreSQL, no Redis.
 * Close it in afterEach/afterAll. (`@nestjs/testing`'s Test.createTestingModule does the same with
 * overrides; this needs no extra dependency.)
 */
export async function serviceContext(providers: Provider[]): Promise<INestApplicationContext> {
  class ServiceUnderTest {}
  Module({ providers })(ServiceUnderTest);
  return NestFactory.createApplicationContext(ServiceUnderTest, { logger: false, abortOnError: false });
}
