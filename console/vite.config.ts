import { fileURLToPath } from 'node:url'
import { defineConfig } from 'vite'

const root = fileURLToPath(new URL('.', import.meta.url))

/**
 * The console's bundle: built into dist/console, which the server serves at `/`
 * (src/api/console/). No inline script or style, so the page runs under a CSP without
 * 'unsafe-inline' (docs/console.md).
 */
export default defineConfig({
  root,
  base: '/',
  publicDir: 'public',
  build: {
    outDir: fileURLToPath(new URL('../dist/console', import.meta.url)),
    emptyOutDir: true,
    target: 'es2022',
    modulePreload: { polyfill: false },
    assetsInlineLimit: 0,
    reportCompressedSize: false,
  },
  server: {
    // `npm run console:dev`: the API of a platform started with `npm start`.
    proxy: { '/v2': 'http://127.0.0.1:8080', '/graphql': 'http://127.0.0.1:8080' },
  },
})
