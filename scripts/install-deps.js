// Installs the exact versions in package-lock.json.
//
// Why not `npm ci`: the registry this project's machines reach has not always served the optional,
// platform-specific binaries (darwin/win32 builds of msgpackr-extract, unrs-resolver); when it
// did not, npm left them out of the lockfile and `npm ci` then refused it as out of sync. The
// lockfile now lists them. `npm install` with the lockfile present installs the same locked
// versions; with --frozen it also fails if the lockfile would change, which is what `npm ci`
// guarantees.
const { createHash } = require('node:crypto');
const { readFileSync } = require('node:fs');
const { execSync } = require('node:child_process');
const path = require('node:path');

const root = path.resolve(__dirname, '..');
const lockfile = path.join(root, 'package-lock.json');
const args = process.argv.slice(2);
const frozen = args.includes('--frozen');
const npmArgs = args.filter((a) => a !== '--frozen').join(' ');
const digest = () => createHash('sha256').update(readFileSync(lockfile)).digest('hex');

const before = digest();
execSync(`npm install --no-audit --no-fund ${npmArgs}`.trim(), { cwd: root, stdio: 'inherit' });
if (frozen && digest() !== before) {
  console.error('package-lock.json changed during install: run `npm install` and commit the lockfile');
  process.exit(1);
}
