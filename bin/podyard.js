#!/usr/bin/env node
// The published entry point runs the compiled composition root (dist/): built by `npm pack`
// (prepack) into the tarball, and by `npm install` in a checkout (prepare).
import { run } from '../dist/main.js'

process.exitCode = await run(process.argv)
