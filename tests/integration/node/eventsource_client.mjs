// A real SSE client for the tests: the npm `eventsource` package (the WHATWG EventSource).
// Usage: node eventsource_client.mjs URL   with TMUXLOCD_TEST_TOKEN (the bearer token, read
// once, as a client would) and TMUXLOCD_TEST_NODE_MODULES (where `eventsource` is installed).
// Prints one JSON line per thing that happens: {"kind": "open"}, {"kind": "event", "type",
// "id"}, {"kind": "error", "code", "readyState"} (readyState 2: closed for good).
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'

const modules = process.env.TMUXLOCD_TEST_NODE_MODULES
const { EventSource } = await import(
  pathToFileURL(join(modules, 'eventsource', 'dist', 'index.js')).href)
const token = process.env.TMUXLOCD_TEST_TOKEN
const say = (obj) => process.stdout.write(JSON.stringify(obj) + '\n')

const es = new EventSource(process.argv[2], {
  fetch: (input, init) =>
    fetch(input, { ...init, headers: { ...init.headers, Authorization: `Bearer ${token}` } }),
})
es.onopen = () => say({ kind: 'open' })
es.onerror = (err) => say({ kind: 'error', code: err.code ?? null, readyState: es.readyState })
for (const type of ['snapshot', 'reset', 'lagged', 'pane.added', 'pane.changed',
  'pane.removed', 'server.up', 'server.down']) {
  es.addEventListener(type, (ev) => {
    const data = JSON.parse(ev.data)
    say({ kind: 'event', type, id: ev.lastEventId, panes: (data.panes ?? []).length })
  })
}
process.stdin.on('end', () => { es.close(); process.exit(0) })
process.stdin.resume()
