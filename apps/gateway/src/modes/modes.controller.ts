import { Controller, Get, Inject } from '@nestjs/common';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import type { ConclaveConfig } from '@conclave/config';
import { MODE_NAMES, type ModeDescription } from '@conclave/contracts';
import { modeDefinition } from '@conclave/deliberation';
import { CONFIG } from '@conclave/platform';

@ApiTags('modes')
@Controller('modes')
export class ModesController {
  constructor(@Inject(CONFIG) private readonly config: ConclaveConfig) {}

  @Get()
  @ApiOperation({ summary: "Each mode's roster rules, options and defaults" })
  list(): ModeDescription[] {
    return MODE_NAMES.map((mode) => {
      const definition = modeDefinition(mode);
      if (definition) return definition.describe(this.config.defaults);
      return { mode, available: false, multiTurn: false, roster: [], defaults: {}, options: [] };
    });
  }
}
