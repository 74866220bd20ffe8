import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { brotliCompress, constants, gzip } from 'node:zlib';
import { promisify } from 'node:util';
import { defineConfig, type Plugin } from 'vite';

const here = fileURLToPath(new URL('.', import.meta.url));

/** Text files worth compressing; images and fonts are compressed already. */
const COMPRESSIBLE = /\.(?:js|mjs|css|html|json|svg|txt|map|wasm)$/;

const brotli = promisify(brotliCompress);
const gzipped = promisify(gzip);

/**
 * Writes `<file>.br` (brotli, quality 11) and `<file>.gz` (gzip -9) next to every compressible
 * file under `assets/`, once, at build time: the gateway sends the one the browser accepts
 * (apps/gateway/src/web-client.ts), without compressing anything per request. A copy that is not
 * smaller than the file is not written.
 */
function precompress(): Plugin {
  return {
    name: 'conclave:precompress',
    apply: 'build',
    async writeBundle(options, bundle) {
      const dir = options.dir ?? here;
      const files = Object.keys(bundle).filter(
        (name) => name.startsWith('assets/') && COMPRESSIBLE.test(name),
      );
      await Promise.all(
        files.map(async (name) => {
          const path = join(dir, name);
          const original = await readFile(path);
          const [br, gz] = await Promise.all([
            brotli(original, {
              params: {
                [constants.BROTLI_PARAM_QUALITY]: constants.BROTLI_MAX_QUALITY,
                [constants.BROTLI_PARAM_MODE]: constants.BROTLI_MODE_TEXT,
                [constants.BROTLI_PARAM_SIZE_HINT]: original.length,
              },
            }),
            gzipped(original, { level: constants.Z_BEST_COMPRESSION }),
          ]);
          if (br.length < original.length) await writeFile(`${path}.br`, br);
          if (gz.length < original.length) await writeFile(`${path}.gz`, gz);
        }),
      );
    },
  };
}

/**
 * Vendor code in chunks of its own: it changes far less often than the client, so a new release
 * of the client leaves the browser's cached copies (immutable, by hash) in use.
 */
const VENDOR_CHUNKS: { name: string; test: RegExp }[] = [
  { name: 'react', test: /[\\/]node_modules[\\/](?:react|react-dom|scheduler)[\\/]/ },
  {
    name: 'socket',
    test: /[\\/]node_modules[\\/](?:socket\.io-client|socket\.io-parser|engine\.io-client|engine\.io-parser|@socket\.io[\\/]component-emitter|xmlhttprequest-ssl|debug|ms)[\\/]/,
  },
  { name: 'markdown', test: /[\\/]node_modules[\\/](?:marked|dompurify)[\\/]/ },
];

export default defineConfig({
  root: here,
  base: '/',
  resolve: {
    alias: {
      '@conclave/contracts': fileURLToPath(new URL('../../libs/contracts/src/index.ts', import.meta.url)),
      // The event describer only (its files import nothing but the contracts), not the engine.
      '@conclave/deliberation/event-text': fileURLToPath(
        new URL('../../libs/deliberation/src/event-text/index.ts', import.meta.url),
      ),
    },
  },
  oxc: { jsx: { runtime: 'automatic' } },
  plugins: [precompress()],
  build: {
    outDir: process.env.WEB_OUT_DIR ?? fileURLToPath(new URL('../../dist/web', import.meta.url)),
    emptyOutDir: true,
    rolldownOptions: {
      output: {
        codeSplitting: {
          groups: VENDOR_CHUNKS.map(({ name, test }, i) => ({
            name,
            test,
            priority: VENDOR_CHUNKS.length - i,
          })),
        },
      },
    },
  },
});
