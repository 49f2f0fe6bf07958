// docs/ag-ui.md's HttpAgent example, run as a user would (node, the released @ag-ui/client) against the offline service on a
// real socket; its output must be the one the page shows.
import { execFile } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { test } from 'tap'
import { buildTestApp } from '../helpers/app.js'
import { ROOMY_LIMITS } from '../helpers/agent.js'
import { listen } from '../helpers/fake-app.js'

const root = join(import.meta.dirname, '..', '..')
const page = readFileSync(join(root, 'docs', 'ag-ui.md'), 'utf8')

/** The first fenced block after `marker`, and the language it names. */
function blockAfter (marker: string): string {
  const start = page.indexOf(marker)
  if (start === -1) throw new Error(`docs/ag-ui.md has no ${marker}`)
  const match = /```\w*\n([\s\S]*?)```/.exec(page.slice(start))
  if (match?.[1] === undefined) throw new Error(`no code block after ${marker}`)
  return match[1]
}

test('the page\'s HttpAgent example runs against the service and prints what the page shows', async (t) => {
  const { app } = await buildTestApp(t, ROOMY_LIMITS)
  const base = await listen(t, app)
  // Inside the project, so that `@ag-ui/client` resolves from its node_modules as it would in the reader's project.
  const script = join(root, 'node_modules', `.agui-docs-example-${randomUUID()}.mjs`)
  writeFileSync(script, blockAfter('<!-- agui-example -->'))
  t.teardown(() => { rmSync(script, { force: true }) })
  const { stdout } = await promisify(execFile)(process.execPath, [script], {
    env: { ...process.env, AGUI_URL: `${base}/api/v1/agui`, NODE_ENV: 'production' },
    timeout: 60_000,
  })
  t.equal(stdout, blockAfter('With the offline model it prints:'))
})
