import { Inject, Injectable } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import type { ConclaveConfig } from '@conclave/config';
import { CONFIG } from '@conclave/platform';
import type { AddressInfo } from 'node:net';

/**
 * The base of the links an answer carries (the web client's `#/m/<id>`): PUBLIC_URL, or without it
 * the address the gateway listens on (`http://localhost:<port>` when it listens on every interface).
 * Never a request's Host or X-Forwarded-* header: any client sets those, and the link would point
 * wherever it said.
 */
export function listeningBase(address: AddressInfo | string | null): string {
  if (address === null || typeof address === 'string') return 'http://localhost';
  const wildcard = address.address === '0.0.0.0' || address.address === '::' || address.address === '';
  const host = wildcard ? 'localhost' : address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return `http://${host}:${address.port}`;
}

@Injectable()
export class PublicUrl {
  constructor(
    @Inject(CONFIG) private readonly config: ConclaveConfig,
    private readonly adapter: HttpAdapterHost,
  ) {}

  base(): string {
    if (this.config.publicUrl !== null) return this.config.publicUrl;
    const server = this.adapter.httpAdapter?.getHttpServer() as { address(): AddressInfo | string | null };
    return listeningBase(server?.address() ?? null);
  }

  /** The web client's page of one deliberation. */
  messageLink(messageId: string): string {
    return `${this.base()}/#/m/${encodeURIComponent(messageId)}`;
  }
}
