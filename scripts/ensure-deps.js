// Runs before `npm start`: a fresh clone gets its dependencies from the lockfile first.
const { existsSync } = require('node:fs');
const { execSync } = require('node:child_process');
const path = require('node:path');

const root = path.resolve(__dirname, '..');
if (!existsSync(path.join(root, 'node_modules', '.package-lock.json'))) {
  console.log('[conclave] installing dependencies from package-lock.json (first run only)…');
  execSync(`${process.execPath} scripts/install-deps.js`, { cwd: root, stdio: 'inherit' });
}
