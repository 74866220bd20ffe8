#!/usr/bin/env node
// The `conclave` CLI, run from its TypeScript sources (apps/cli/src) from any working directory.
'use strict';
const path = require('node:path');

const root = path.resolve(__dirname, '..');
process.env.TS_NODE_PROJECT = path.join(root, 'tsconfig.json');
require(require.resolve('ts-node/register/transpile-only', { paths: [root] }));
require(require.resolve('tsconfig-paths/register', { paths: [root] }));
require(path.join(root, 'apps/cli/src/main.ts'));
