/**
 * A small, dependency-free GraphQL console served at /graphiql. mercurius's own GraphiQL page
 * loads React and GraphiQL from unpkg.com at run time, which fails offline and on hosts that
 * cannot reach the internet, so podyard serves this instead (docs/graphql.md).
 */
export const GRAPHIQL_HTML = /* html */ `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>podyard GraphQL</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
  body { font: 14px system-ui, sans-serif; margin: 0; display: grid; grid-template-columns: 1fr 1fr; grid-template-rows: auto 1fr; height: 100vh; }
  header { grid-column: 1 / 3; display: flex; gap: .5rem; align-items: center; padding: .5rem; background: #222; color: #eee; }
  header input { flex: 1; font: inherit; }
  section { display: flex; flex-direction: column; min-height: 0; padding: .5rem; gap: .5rem; }
  textarea, pre { font: 13px ui-monospace, monospace; flex: 1; margin: 0; border: 1px solid #ccc; padding: .5rem; overflow: auto; }
  #variables { flex: 0 0 6rem; }
  button { font: inherit; }
</style>
</head>
<body>
<header>
  <strong>podyard GraphQL</strong>
  <label for="key">API key</label>
  <input id="key" type="password" placeholder="pyd_... (kept in this browser's localStorage)" autocomplete="off">
  <button id="run" title="Ctrl+Enter">Run</button>
  <button id="schema">Schema</button>
</header>
<section>
  <label for="query">Query</label>
  <textarea id="query" spellcheck="false">{
  myself {
    id
    email
    pods { id name desiredStatus runtime { uptimeInSeconds ports { ip privatePort publicPort type } } }
  }
}</textarea>
  <label for="variables">Variables (JSON)</label>
  <textarea id="variables" spellcheck="false">{}</textarea>
</section>
<section>
  <label for="result">Result</label>
  <pre id="result" aria-live="polite"></pre>
</section>
<script>
  const $ = (id) => document.getElementById(id)
  $('key').value = localStorage.getItem('podyard-api-key') || ''
  $('key').addEventListener('change', () => localStorage.setItem('podyard-api-key', $('key').value))
  async function run() {
    let variables = null
    try { variables = $('variables').value.trim() ? JSON.parse($('variables').value) : null }
    catch (e) { $('result').textContent = 'Variables are not JSON: ' + e.message; return }
    $('result').textContent = '...'
    const response = await fetch('/graphql', {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer ' + $('key').value },
      body: JSON.stringify({ query: $('query').value, variables }),
    })
    $('result').textContent = 'HTTP ' + response.status + '\\n' + JSON.stringify(await response.json(), null, 2)
  }
  $('run').addEventListener('click', run)
  document.addEventListener('keydown', (e) => { if (e.ctrlKey && e.key === 'Enter') run() })
  $('schema').addEventListener('click', async () => {
    $('result').textContent = await (await fetch('/graphiql/schema.graphql')).text()
  })
</script>
</body>
</html>
`
