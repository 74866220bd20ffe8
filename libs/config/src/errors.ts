/** A setting that cannot be used: its message names the variable (never a secret value). */
export class ConfigError extends Error {}
