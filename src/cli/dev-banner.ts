/** What `podyard dev` prints once the handler's endpoint exists (docs/dev.md). */
export interface DevBannerView {
  handlerName: string
  baseUrl: string
  apiKey: string
  endpointId: string
  endpointName: string
  command: string
  workers: number
  concurrency: number | undefined
  dataDir: string
  throwaway: boolean
  watching: string
  /** The input the snippets send: the test input's, else a placeholder. */
  exampleInput: unknown
}

/** The curl, runpod-python and runpod-sdk snippets that call the endpoint, ready to paste. */
export function devSnippets(view: DevBannerView): { curl: string; python: string; js: string } {
  const jobUrl = `${view.baseUrl}/v2/${view.endpointId}`
  const body = JSON.stringify({ input: view.exampleInput })
  const curl = [
    `curl -s -X POST ${jobUrl}/runsync \\`,
    `  -H 'Authorization: Bearer ${view.apiKey}' -H 'Content-Type: application/json' \\`,
    `  -d '${body.replaceAll("'", `'\\''`)}'`,
  ].join('\n')
  const python = [
    'import runpod',
    `runpod.api_key = ${JSON.stringify(view.apiKey)}`,
    `runpod.endpoint_url_base = ${JSON.stringify(`${view.baseUrl}/v2`)}`,
    `endpoint = runpod.Endpoint(${JSON.stringify(view.endpointId)})`,
    `print(endpoint.run_sync(${pythonLiteral(view.exampleInput)}, timeout=60))`,
  ].join('\n')
  const js = [
    "import runpodSdk from 'runpod-sdk'",
    `const runpod = runpodSdk(${JSON.stringify(view.apiKey)}, { baseUrl: ${JSON.stringify(`${view.baseUrl}/v2`)} })`,
    `const endpoint = runpod.endpoint(${JSON.stringify(view.endpointId)})`,
    `console.log(await endpoint.runSync({ input: ${JSON.stringify(view.exampleInput)} }))`,
  ].join('\n')
  return { curl, python, js }
}

/** JSON as a Python literal (true/false/null spelled the Python way). */
export function pythonLiteral(value: unknown): string {
  if (value === null || value === undefined) return 'None'
  if (value === true) return 'True'
  if (value === false) return 'False'
  if (Array.isArray(value)) return `[${value.map(pythonLiteral).join(', ')}]`
  if (typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}: ${pythonLiteral(v)}`).join(', ')}}`
  }
  return JSON.stringify(value)
}

const indent = (text: string) =>
  text
    .split('\n')
    .map((line) => `    ${line}`)
    .join('\n')

/** What `podyard dev --json` prints once ready: the banner's facts as one JSON line. */
export function devReadyJson(view: DevBannerView): string {
  const jobUrl = `${view.baseUrl}/v2/${view.endpointId}`
  return JSON.stringify({
    ready: {
      handler: view.handlerName,
      baseUrl: view.baseUrl,
      apiKey: view.apiKey,
      endpointId: view.endpointId,
      endpointName: view.endpointName,
      jobApiUrl: jobUrl,
      openaiBaseUrl: `${jobUrl}/openai/v1`,
      worker: { command: view.command, workers: view.workers, concurrency: view.concurrency ?? 1 },
      dataDir: view.dataDir,
      throwaway: view.throwaway,
      watching: view.watching,
      snippets: devSnippets(view),
    },
  })
}

export function devBanner(view: DevBannerView): string {
  const jobUrl = `${view.baseUrl}/v2/${view.endpointId}`
  const snippets = devSnippets(view)
  const rows: Array<[string, string]> = [
    ['base URL', view.baseUrl],
    ['API key', view.apiKey],
    ['endpoint', `${view.endpointId} (${view.endpointName})`],
    ['job API', `${jobUrl}/{run,runsync,status,stream,cancel,health}`],
    ['OpenAI base', `${jobUrl}/openai/v1`],
    [
      'worker',
      `${view.command}  (${view.workers} worker${view.workers === 1 ? '' : 's'}` +
        `${view.concurrency === undefined ? '' : `, concurrency ${view.concurrency}`})`,
    ],
    ['data dir', `${view.dataDir}${view.throwaway ? ' (removed on exit)' : ''}`],
  ]
  const width = Math.max(...rows.map(([label]) => label.length))
  return [
    `podyard dev: ${view.handlerName} is served at ${jobUrl}`,
    '',
    ...rows.map(([label, value]) => `  ${label.padEnd(width)}  ${value}`),
    '',
    '  curl:',
    indent(snippets.curl),
    '',
    '  runpod-python:',
    indent(snippets.python),
    '',
    '  runpod-sdk (JavaScript):',
    indent(snippets.js),
    '',
    `Watching ${view.watching}: a change restarts the worker (queued jobs wait for it).`,
    'Stop with Ctrl-C: it stops everything it started.',
    '',
  ].join('\n')
}
