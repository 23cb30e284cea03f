#!/usr/bin/env node
// The published entry point runs the compiled composition root; `npm install` builds it (prepare).
import { run } from '../dist/main.js'

process.exitCode = await run(process.argv)
