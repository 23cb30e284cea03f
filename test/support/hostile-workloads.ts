import { createServer, type Server } from 'node:net'

/**
 * What a hostile tenant runs in its pod, for the containment, network and abuse suites: each
 * is a shell command line (a pod's `args`) that stays bounded in count and time, and says in
 * the pod's own log what it got.
 */

/**
 * A bounded fork bomb (1500 sleeps at most); the pod's shell then says how many it made
 * (`forked N`) and stays. `quiet`: the failed forks' complaints go nowhere (bash on the host
 * prints one line per refused fork); busybox's shell dies at the first, saying
 * `can't fork: Resource temporarily unavailable`.
 */
export function forkBomb({ quiet }: { quiet: boolean }): string {
  return (
    `sh -c 'n=0; while [ $n -lt 1500 ]; do sleep 600 & n=$((n+1)); echo $n > /tmp/forked; done'${quiet ? ' 2>/dev/null' : ''}; ` +
    'read n < /tmp/forked; echo "forked $n"; exec sleep 600'
  )
}

/** Touches 1.5 GB (Buffer.alloc fills every page) once the pod is RUNNING: past its 1 GB. */
export const MEMORY_HOG =
  'sleep 2; exec node -e \'const held = []; for (let i = 0; i < 24; i++) held.push(Buffer.alloc(64 * 1024 * 1024, 1)); console.log("survived")\''

/**
 * Node code that defines `resolve(host)`: the host itself, but `gateway`: the pod's default
 * gateway from /proc/net/route (null where it has none), the address a pod finds its host at.
 */
const RESOLVE_GATEWAY = [
  'const resolve = (host) => {',
  '  if (host !== "gateway") return host',
  '  const route = require("fs").readFileSync("/proc/net/route", "utf8").split("\\n").slice(1)',
  '    .map((l) => l.trim().split(/\\s+/)).find((f) => f[1] === "00000000")',
  '  return route ? [3, 2, 1, 0].map((i) => parseInt(route[2].slice(i * 2, i * 2 + 2), 16)).join(".") : null',
  '}',
]

/**
 * Node code run in a pod: tries each target (`name: [host, port]`), prints `REACHED <name>` or
 * `REFUSED <name> <code>` (a 3 s timeout reads `timeout`; `host` may be `gateway`, and where the
 * pod has none, `REFUSED <name> no-gateway`), then `probe-done`, then serves
 * `declared port answers` on its declared port 8080.
 */
export function probeScript(targets: Record<string, [string, number]>): string {
  const code = [
    'const net = require("net")',
    `const targets = ${JSON.stringify(targets)}`,
    ...RESOLVE_GATEWAY,
    'const tryOne = ([name, [to, port]]) => new Promise((done) => {',
    '  const host = resolve(to)',
    '  if (!host) { console.log("REFUSED " + name + " no-gateway"); return done() }',
    '  const s = net.connect({ host, port, timeout: 3000 })',
    '  s.on("connect", () => { console.log("REACHED " + name); s.destroy(); done() })',
    '  s.on("timeout", () => { console.log("REFUSED " + name + " timeout"); s.destroy(); done() })',
    '  s.on("error", (e) => { console.log("REFUSED " + name + " " + e.code); done() })',
    '})',
    ';(async () => {',
    '  for (const entry of Object.entries(targets)) await tryOne(entry)',
    '  console.log("probe-done")',
    '})()',
    'require("http").createServer((q, r) => r.end("declared port answers")).listen(process.env.RUNPOD_TCP_PORT_8080 || 8080)',
  ].join('\n')
  return `exec node -e '${code}'`
}

/**
 * Node code run in a pod: a TCP connect scan of `ports` on each of `hosts`, 256 at a time, each
 * given `timeoutMs` (`gateway`: the pod's default gateway). Per host it prints `SCAN <host> open=<ports> refused=<n> timeout=<n>
 * other=<n>`, then `scan-done`, and stays.
 */
export function portScanScript(hosts: string[], ports: number[], timeoutMs = 1500): string {
  const code = [
    'const net = require("net")',
    `const hosts = ${JSON.stringify(hosts)}`,
    `const ports = ${JSON.stringify(ports)}`,
    ...RESOLVE_GATEWAY,
    'const knock = (host, port) => new Promise((done) => {',
    `  const s = net.connect({ host, port, timeout: ${timeoutMs} })`,
    '  s.on("connect", () => { s.destroy(); done("open") })',
    '  s.on("timeout", () => { s.destroy(); done("timeout") })',
    '  s.on("error", (e) => done(e.code === "ECONNREFUSED" ? "refused" : "other"))',
    '})',
    ';(async () => {',
    '  for (const to of hosts) {',
    '    const host = resolve(to)',
    '    if (!host) { console.log(`SCAN ${to} none`); continue }',
    '    const seen = { open: [], refused: 0, timeout: 0, other: 0 }',
    '    for (let i = 0; i < ports.length; i += 256) {',
    '      const batch = ports.slice(i, i + 256)',
    '      const outcomes = await Promise.all(batch.map((port) => knock(host, port)))',
    '      outcomes.forEach((o, k) => { if (o === "open") seen.open.push(batch[k]); else seen[o] += 1 })',
    '    }',
    '    console.log(`SCAN ${to}=${host} open=${seen.open.join(",")} refused=${seen.refused} timeout=${seen.timeout} other=${seen.other}`)',
    '  }',
    '  console.log("scan-done")',
    '})()',
    'setInterval(() => {}, 1 << 30)',
  ].join('\n')
  return `exec node -e '${code}'`
}

/** A listener that hands a secret to whoever connects (port 0: a free one). */
export function secretServer(
  host: string,
  secret: string,
  port = 0,
): Promise<{ server: Server; port: number }> {
  return new Promise((resolve, reject) => {
    const server = createServer((socket) => socket.end(`${secret}\n`))
    server.once('error', reject)
    server.listen(port, host, () => {
      const address = server.address()
      resolve({ server, port: typeof address === 'object' && address ? address.port : 0 })
    })
  })
}
