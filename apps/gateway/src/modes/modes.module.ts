import { Module } from '@nestjs/common';
import { ModesController } from './modes.controller';

/** GET /api/modes: each mode's summary, roles and defaults. */
@Module({ controllers: [ModesController] })
export class ModesModule {}
