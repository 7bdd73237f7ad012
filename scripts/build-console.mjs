// Builds the operations console (console/) into dist/console, or into --outdir DIR:
// the TypeScript bundled by esbuild into one script, the page and its style sheet copied.
// Everything the page needs is served by the connector itself: nothing is fetched from a CDN.
import { copyFileSync, mkdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const at = process.argv.indexOf('--outdir');
const outdir = at >= 0 && process.argv[at + 1] !== undefined ? resolve(process.argv[at + 1]) : join(root, 'dist', 'console');
mkdirSync(outdir, { recursive: true });
await build({
  entryPoints: [join(root, 'console', 'src', 'main.ts')],
  outfile: join(outdir, 'console.js'),
  bundle: true,
  format: 'iife',
  target: ['es2020'],
  minify: true,
  sourcemap: false,
  legalComments: 'none',
  logLevel: 'warning',
});
copyFileSync(join(root, 'console', 'index.html'), join(outdir, 'index.html'));
copyFileSync(join(root, 'console', 'console.css'), join(outdir, 'console.css'));
