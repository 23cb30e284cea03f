/**
 * The composition root of the commands that work on the store without a server (`podyard
 * migrate`, `keys`, `accounts`, `store ...`): config -> store -> the few services they use.
 * main.ts loads it instead of platform.ts for them: platform.ts would load the HTTP server, the
 * drivers and the control loops too, about 0.4 s more of each such command's start here.
 */
export { openMigratedStore } from './wiring/store-wiring.js'
export { withStoreCommands } from './wiring/store-commands.js'
