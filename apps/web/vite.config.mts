import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

const here = fileURLToPath(new URL('.', import.meta.url));

export default defineConfig({
  root: here,
  base: '/',
  resolve: {
    alias: {
      '@conclave/contracts': fileURLToPath(new URL('../../libs/contracts/src/index.ts', import.meta.url)),
    },
  },
  oxc: { jsx: { runtime: 'automatic' } },
  build: {
    outDir: process.env.WEB_OUT_DIR ?? fileURLToPath(new URL('../../dist/web', import.meta.url)),
    emptyOutDir: true,
  },
});
