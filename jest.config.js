/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/libs', '<rootDir>/apps', '<rootDir>/test'],
  testRegex: '.*\\.(spec|e2e-spec)\\.tsx?$',
  // One ts-jest configuration for .ts and the web client's .tsx (tsconfig.json sets jsx): two
  // configurations in one worker process share ts-jest's cached compiler settings.
  transform: { '^.+\\.tsx?$': ['ts-jest', { tsconfig: 'tsconfig.json', diagnostics: false }] },
  moduleNameMapper: {
    '^@conclave/(contracts|deliberation|llm|persistence|config|observability|redis|platform|analysis|outcomes)$':
      '<rootDir>/libs/$1/src',
    // marked ships only ESM under its main entry; its UMD build is the same code for jest's CommonJS.
    '^marked$': '<rootDir>/node_modules/marked/lib/marked.umd.js',
  },
  setupFiles: ['reflect-metadata'],
  reporters: ['default', '<rootDir>/test/support/summary-reporter.js'],
  maxWorkers: 2,
  testTimeout: 60000,
};
