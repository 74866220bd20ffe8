import { Inject, Injectable } from '@nestjs/common';
import type { ConclaveConfig } from '@conclave/config';
import { ensureLocalUser, userIdForApiKey } from '@conclave/persistence';
import { DataSource } from 'typeorm';
import { CONFIG } from '../tokens';

@Injectable()
export class AuthService {
  private localUser: Promise<string> | null = null;

  constructor(
    @Inject(CONFIG) private readonly config: ConclaveConfig,
    private readonly dataSource: DataSource,
  ) {}

  /** The user a bearer token (or, in single-user mode, nothing) stands for; null when refused. */
  async userFor(token: string | undefined): Promise<string | null> {
    if (this.config.authMode === 'none') {
      this.localUser ??= ensureLocalUser(this.dataSource).catch((error: unknown) => {
        this.localUser = null;
        throw error;
      });
      return this.localUser;
    }
    if (!token) return null;
    return userIdForApiKey(this.dataSource, token);
  }

  static bearer(header: string | undefined): string | undefined {
    const match = /^Bearer\s+(\S+)\s*$/i.exec(header ?? '');
    return match?.[1];
  }
}
