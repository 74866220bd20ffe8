export { mergePreset, type PresetMerge } from './apply-preset';
export { PresetsController } from './presets.controller';
export { PresetsModule } from './presets.module';
export { PresetsService, type PresetCheck, type PresetResolution } from './presets.service';
