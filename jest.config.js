/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/libs', '<rootDir>/apps', '<rootDir>/test'],
  testRegex: '.*\\.(spec|e2e-spec)\\.tsx?$',
  transform: {
    '^.+\\.ts$': ['ts-jest', { tsconfig: 'tsconfig.json', diagnostics: false }],
    // The web client's components: its own JSX settings, compiled to CommonJS for jest.
    '^.+\\.tsx$': [
      'ts-jest',
      {
        tsconfig: { jsx: 'react-jsx', module: 'commonjs', esModuleInterop: true, target: 'ES2022' },
        diagnostics: false,
      },
    ],
  },
  moduleNameMapper: {
    '^@conclave/(contracts|deliberation|llm|persistence|config)$': '<rootDir>/libs/$1/src',
    // marked ships only ESM under its main entry; its UMD build is the same code for jest's CommonJS.
    '^marked$': '<rootDir>/node_modules/marked/lib/marked.umd.js',
  },
  setupFiles: ['reflect-metadata'],
  reporters: ['default', '<rootDir>/test/support/summary-reporter.js'],
  maxWorkers: 2,
  testTimeout: 60000,
};
