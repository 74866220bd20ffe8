import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import globals from 'globals';

/** Framework and driver modules the deliberation library never imports. */
const DELIBERATION_FRAMEWORKS = ['@nestjs/*', 'typeorm', 'bullmq', 'ioredis', 'socket.io', 'express', 'pg'];
/** Redis clients and queues: @conclave/redis's alone. */
const REDIS_CLIENTS = ['ioredis', 'bullmq', '@nestjs/bullmq'];
const PERSISTENCE_FORBIDDEN = [
  { name: '@conclave/redis', message: 'Persistence is SQL only: Redis code lives in @conclave/redis.' },
  {
    name: '@conclave/analysis',
    message: 'Persistence imports no analysis: shared row shapes live in @conclave/contracts.',
  },
];
const TESTS = ['**/*.spec.ts', '**/*.db-spec.ts', '**/*.e2e-spec.ts'];

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'coverage/**', 'apps/web/dist/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    rules: {
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
  {
    // The deliberation library stays free of framework imports (architecture rule).
    files: ['libs/deliberation/src/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', { patterns: DELIBERATION_FRAMEWORKS }],
    },
  },
  {
    // The engine runs any mode and knows none: modes register with it (modes/index.ts), never the
    // other way round (architecture rule). Its specs run it with the real modes.
    files: ['libs/deliberation/src/engine/**/*.ts'],
    ignores: TESTS,
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            { group: DELIBERATION_FRAMEWORKS },
            {
              regex: '(^|/)modes(/|$)',
              message: 'The engine imports no mode: a mode registers in modes/index.ts.',
            },
            {
              regex: '^@conclave/deliberation$|^\\.\\.(/index)?$',
              message: "The library's index re-exports the modes: import the engine file itself.",
            },
          ],
        },
      ],
    },
  },
  {
    // One technology per library (architecture rule): persistence is SQL through TypeORM. Redis code
    // (queues, channels, Lua) is @conclave/redis's; what reports compute is @conclave/analysis's.
    files: ['libs/persistence/src/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', { paths: PERSISTENCE_FORBIDDEN }],
    },
  },
  {
    // ...and its production code talks to no Redis at all (a spec may make a Redis error to classify).
    files: ['libs/persistence/src/**/*.ts'],
    ignores: TESTS,
    rules: {
      'no-restricted-imports': ['error', { paths: [...PERSISTENCE_FORBIDDEN, ...REDIS_CLIENTS] }],
    },
  },
  {
    // Observability (logs, metrics) knows no store: readiness, which asks both, is @conclave/platform's.
    files: ['libs/observability/src/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: [
            { name: '@conclave/redis', message: 'Observability imports no store library.' },
            ...REDIS_CLIENTS,
          ],
        },
      ],
    },
  },
  {
    // The event describer and each mode's event texts are bundled by the web client too
    // (apps/web/vite.config.mts): they import the contracts and each other only, never the engine.
    files: ['libs/deliberation/src/event-text/**/*.ts', 'libs/deliberation/src/modes/*/*.events.ts'],
    ignores: ['**/*.spec.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: ['@nestjs/*', 'node:*', 'typeorm', 'bullmq', 'ioredis', 'socket.io', 'express', 'pg'],
              message: 'The web bundles this: no framework, no Node.',
            },
            {
              group: ['@conclave/*', '!@conclave/contracts'],
              message: 'The web bundles this: contracts only.',
            },
            {
              group: ['**/engine/**', '**/shared/**', '**/*.mode', '**/*.prompts', '**/*.config', '**/*.sim'],
              message: 'The web bundles this: no engine or mode code, only the event texts.',
            },
            {
              // an index (`..`, `../modes`, `../index`): the library's or every mode's engine code
              regex: '^(\\.{1,2}(/\\.\\.)*|.*/modes|.*/index)$',
              message: 'The web bundles this: no engine or mode code, only the event texts.',
            },
          ],
        },
      ],
    },
  },
  {
    // The analysis library is plain TypeScript that must also run in the browser: no framework,
    // no Node-only modules (architecture rule).
    files: ['libs/analysis/src/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          // Exact module names; `patterns` would also catch a local file such as './path'.
          paths: [
            'typeorm',
            'bullmq',
            'ioredis',
            'socket.io',
            'express',
            'pg',
            'fs',
            'path',
            'crypto',
            'os',
            'stream',
            'util',
            'worker_threads',
            'child_process',
          ],
          patterns: ['@nestjs/*', 'node:*'],
        },
      ],
    },
  },
  {
    files: ['**/*.js', '**/*.mjs', '**/*.cjs'],
    languageOptions: { globals: globals.node },
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
);
