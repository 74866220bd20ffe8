import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import globals from 'globals';

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
      'no-restricted-imports': [
        'error',
        { patterns: ['@nestjs/*', 'typeorm', 'bullmq', 'ioredis', 'socket.io', 'express', 'pg'] },
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
