import { Inject, Injectable } from '@nestjs/common';
import type { ConclaveConfig } from '@conclave/config';
import { ApiKeysRepository } from '@conclave/persistence';
import { CONFIG } from '@conclave/platform';

export interface Identity {
  userId: string;
  /** The API key's id; null in single-user mode (AUTH_MODE=none), where there is none. */
  keyId: string | null;
}

@Injectable()
export class AuthService {
  private localUser: Promise<string> | null = null;

  constructor(
    @Inject(CONFIG) private readonly config: ConclaveConfig,
    private readonly apiKeys: ApiKeysRepository,
  ) {}

  /** The user a bearer token (or, in single-user mode, nothing) stands for; null when refused. */
  async userFor(token: string | undefined): Promise<string | null> {
    return (await this.identify(token))?.userId ?? null;
  }

  /** The user and the key (none in single-user mode) a bearer token stands for; null when refused. */
  async identify(token: string | undefined): Promise<Identity | null> {
    if (this.config.authMode === 'none') {
      this.localUser ??= this.apiKeys.ensureLocalUser().catch((error: unknown) => {
        this.localUser = null;
        throw error;
      });
      return { userId: await this.localUser, keyId: null };
    }
    if (!token) return null;
    return this.apiKeys.ownerOf(token);
  }

  static bearer(header: string | undefined): string | undefined {
    const match = /^Bearer\s+(\S+)\s*$/i.exec(header ?? '');
    return match?.[1];
  }
}
