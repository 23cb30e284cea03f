import { CodeBlock } from '../../components/code-block'
import { Section } from '../../components/page'

/**
 * How to call the endpoint from outside: the job API's base, the OpenAI-compatible base URL,
 * and snippets for curl, runpod-python and runpod-sdk (JavaScript). The base is the address
 * the console was opened at, which is the server's.
 */
export function ConnectPanel({ endpointId }: { endpointId: string }) {
  const base = `${window.location.origin}/v2`
  const curl = [
    `curl -s -X POST ${base}/${endpointId}/runsync \\`,
    `  -H "Authorization: Bearer $PODYARD_API_KEY" -H 'content-type: application/json' \\`,
    `  -d '{"input": {"prompt": "hello"}}'`,
  ].join('\n')
  const python = [
    'import os, runpod',
    '',
    `runpod.api_key = os.environ["PODYARD_API_KEY"]`,
    `runpod.endpoint_url_base = "${base}"`,
    `endpoint = runpod.Endpoint("${endpointId}")`,
    'print(endpoint.run_sync({"prompt": "hello"}, timeout=120))',
  ].join('\n')
  const js = [
    "import runpodSdk from 'runpod-sdk'",
    '',
    `const runpod = runpodSdk(process.env.PODYARD_API_KEY, { baseUrl: '${base}' })`,
    `const endpoint = runpod.endpoint('${endpointId}')`,
    "console.log(await endpoint.runSync({ input: { prompt: 'hello' } }))",
  ].join('\n')
  return (
    <Section title="Connect">
      <dl className="details">
        <div>
          <dt>Job API</dt>
          <dd className="mono">
            {base}/{endpointId}/
          </dd>
        </div>
        <div>
          <dt>OpenAI base URL</dt>
          <dd className="mono">
            {base}/{endpointId}/openai/v1
          </dd>
        </div>
      </dl>
      <CodeBlock label="curl" code={curl} />
      <CodeBlock label="runpod-python" code={python} />
      <CodeBlock label="runpod-sdk (JavaScript)" code={js} />
    </Section>
  )
}
