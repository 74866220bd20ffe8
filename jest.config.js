/**
 * Four test tiers, one jest run (`npm test` runs them all; `npm run test:<tier>` runs one):
 *
 * - unit  `*.spec.ts` beside the code (and test/*.spec.ts): no services. Connecting to PostgreSQL
 *         (5432) or Redis (6379) fails the test (test/support/no-services.ts).
 * - web   the web client's specs in apps/web/test, in jsdom: no services either.
 * - db    `*.db-spec.ts` beside the code: a live PostgreSQL and/or Redis on 127.0.0.1.
 * - e2e   `*.e2e-spec.ts` (test/ and libs/outcomes): the whole stack (gateway, workers,
 *         PostgreSQL, Redis; Chromium for test/web*.e2e-spec.ts).
 *
 * A file matches exactly one project's pattern, so every test runs once.
 */
const shared = {
  rootDir: __dirname,
  testEnvironment: 'node',
  // One ts-jest configuration for .ts and the web client's .tsx (tsconfig.json sets jsx), the same
  // in every project: two configurations in one worker process share ts-jest's cached compiler settings.
  transform: { '^.+\\.tsx?$': ['ts-jest', { tsconfig: 'tsconfig.json', diagnostics: false }] },
  testTimeout: 60000,
  moduleNameMapper: {
    // Each mode's facts alone (data only), for code that may not load the engine (ModeFacts).
    '^@conclave/deliberation/facts$': '<rootDir>/libs/deliberation/src/modes/facts.ts',
    '^@conclave/(contracts|deliberation|llm|persistence|config|observability|redis|platform|analysis|outcomes)$':
      '<rootDir>/libs/$1/src',
    '^@conclave/deliberation/event-text$': '<rootDir>/libs/deliberation/src/event-text',
    // marked ships only ESM under its main entry; its UMD build is the same code for jest's CommonJS.
    '^marked$': '<rootDir>/node_modules/marked/lib/marked.umd.js',
  },
};
const noServices = ['<rootDir>/test/support/no-services.ts'];
const services = ['reflect-metadata', '<rootDir>/test/support/services.ts'];

/** @type {import('jest').Config} */
module.exports = {
  projects: [
    {
      ...shared,
      displayName: 'unit',
      roots: ['<rootDir>/libs', '<rootDir>/apps', '<rootDir>/test'],
      // `.spec.ts` only: `.db-spec.ts` and `.e2e-spec.ts` have a dash where this has a dot.
      testRegex: '\\.spec\\.tsx?$',
      testPathIgnorePatterns: ['/node_modules/', '<rootDir>/apps/web/'],
      setupFiles: ['reflect-metadata'],
      setupFilesAfterEnv: noServices,
    },
    {
      ...shared,
      displayName: 'web',
      roots: ['<rootDir>/apps/web'],
      testRegex: '\\.spec\\.tsx?$',
      setupFiles: ['reflect-metadata'],
      setupFilesAfterEnv: noServices,
    },
    {
      ...shared,
      displayName: 'db',
      roots: ['<rootDir>/libs', '<rootDir>/apps'],
      testRegex: '.*\\.db-spec\\.tsx?$',
      setupFiles: services,
    },
    {
      ...shared,
      displayName: 'e2e',
      roots: ['<rootDir>/libs', '<rootDir>/apps', '<rootDir>/test'],
      testRegex: '.*\\.e2e-spec\\.tsx?$',
      setupFiles: services,
    },
  ],
  reporters: ['default', '<rootDir>/test/support/summary-reporter.js'],
  maxWorkers: 2,
  testTimeout: 60000,
};
