// Docs that run: every fenced shell and JavaScript example of README.md and docs/*.md is executed against the service
// it describes (the production bundle, started as `npm start` starts it), so an example can never be wrong for long.
//
// How a page's blocks run (each in bash, from the page's own working directory, in page order):
// - `npm start` (with its `VAR=value` prefixes) starts the bundle with exactly those settings on a free port and waits
//   for /health; a block without one gets a service on the defaults. `npm ci`, `npm test` and `npm run ...` are not
//   run again (this suite is `npm test`, in an installed checkout).
// - `curl` reaches that service for `localhost:8000`; every answer must be 2xx or 3xx unless the block says
//   `<!-- doc-test: expect 429 -->` before it. `docker ...` and `open ...` are not run (compose.yaml is checked by
//   test/deploy*.test.ts).
// - A ```js block runs with node, `localhost:8000` meaning the block's service.
// - A ```text block that holds `$ command` lines is a transcript: each command runs on its own (as a shell block)
//   and the lines under it must appear in what it printed (`$ PORT=abc npm start` shows the line startup stops with).
// - `<!-- doc-test: file models.yaml -->` before a yaml/json block writes it into the page's directory.
// - `<!-- doc-test: skip <why> -->` before a block skips it, saying why (a React component, a Docker stack).
// - An answer shown in a comment as compact JSON (`# {"content":"The result is 14.",...}`, also after `# data: `) is
//   checked: each `"key":"text"` pair in it without `...`, `…` or `<` must be in the block's output. Pairs written
//   with a space after the colon are illustrations of another setup (an Anthropic model, a paid key) and are not.
import { execFile, spawn } from 'node:child_process'
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { parse as parseYaml } from 'yaml'
import tap, { test } from 'tap'

tap.setTimeout(900_000)

const root = fileURLToPath(new URL('../', import.meta.url))
const pages = ['README.md', ...readdirSync(join(root, 'docs')).filter((name) => name.endsWith('.md')).sort().map((name) => `docs/${name}`)]

interface Block { page: string, line: number, lang: string, body: string, directive: string }

/** The fenced blocks of a page, each with the `<!-- doc-test: ... -->` directive that precedes it (if any). */
function blocksOf (page: string): Block[] {
  const lines = readFileSync(join(root, page), 'utf8').split('\n')
  const blocks: Block[] = []
  let directive = ''
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] ?? ''
    const marker = /^<!-- doc-test: (.*) -->$/.exec(line.trim())
    if (marker !== null) {
      directive = marker[1] ?? ''
      continue
    }
    const fence = /^(\s*)```(\w*)\s*$/.exec(line)
    if (fence === null) {
      if (line.trim() !== '') directive = ''
      continue
    }
    const indent = fence[1]?.length ?? 0
    const body: string[] = []
    const start = i + 1
    for (i++; i < lines.length && !/^\s*```\s*$/.test(lines[i] ?? ''); i++) body.push((lines[i] ?? '').slice(indent))
    blocks.push({ page, line: start, lang: fence[2] ?? '', body: body.join('\n') + '\n', directive })
    directive = ''
  }
  return blocks
}

/** The `"key":"text"` pairs a block's compact JSON comments promise its output holds. */
function promisedPairs (body: string): string[] {
  const pairs: string[] = []
  for (const line of body.split('\n')) {
    const shown = /^#\s*(?:data: )?(\{.*)$/.exec(line.trim())?.[1]
    if (shown === undefined) continue
    for (const match of shown.matchAll(/"[\w-]+":"[^"]*"/g)) {
      if (!/\.\.\.|…|</.test(match[0])) pairs.push(match[0])
    }
  }
  return pairs
}

const SHELL = new Set(['sh', 'bash', 'shell'])
const SCRIPT = new Set(['js', 'mjs'])

/** Settings of a fresh machine: no variable of this test run (Redis, keys, loaders, coverage) reaches the service. */
function cleanEnv (): Record<string, string> {
  const keep = ['PATH', 'HOME', 'LANG', 'TMPDIR']
  return Object.fromEntries(keep.flatMap((name) => process.env[name] === undefined ? [] : [[name, process.env[name] as string]]))
}

const PRELUDE = String.raw`
set -eo pipefail
DOC_PORT=
DOC_PID=
doc_stop () {
  if [ -n "$DOC_PID" ]; then kill "$DOC_PID" 2>/dev/null || true; wait "$DOC_PID" 2>/dev/null || true; DOC_PID=; fi
}
trap doc_stop EXIT
doc_start () {
  doc_stop
  DOC_PORT=$(command node -e 's=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')
  # A numeric PORT of the example becomes a free one; any other value (PORT=abc) is what the example shows failing.
  case "$PORT" in ''|*[!0-9]*) [ -n "$PORT" ] && DOC_PORT=$PORT ;; esac
  PORT=$DOC_PORT HOST=127.0.0.1 command node "$DOC_SERVER" > service.log 2>&1 &
  DOC_PID=$!
  DOC_WAIT=0
  until command curl -s -o /dev/null "http://127.0.0.1:$DOC_PORT/health"; do
    DOC_WAIT=$((DOC_WAIT + 1))
    if ! kill -0 "$DOC_PID" 2>/dev/null || [ "$DOC_WAIT" -gt 1200 ]; then
      echo "doc-test: the service did not start:" >&2; cat service.log; DOC_PID=; exit 1
    fi
    sleep 0.05
  done
}
npm () {
  case "$1" in
    start) doc_start ;;
    ci|test|run) echo "doc-test: npm $* is not run again here" >&2 ;;
    *) command npm "$@" ;;
  esac
}
curl () {
  command curl --connect-to "localhost:8000:127.0.0.1:$DOC_PORT" --max-time 60 -w '%{stderr}doc-test-status %{http_code}\n' "$@"
}
docker () { echo "doc-test: docker $* is not run here" >&2; }
open () { :; }
`

/** A shell block as a script: a service on the defaults first unless the block starts its own. */
function script (body: string): string {
  const startsOwn = /(^|[\s;&|(])npm start\b/m.test(body)
  return PRELUDE + (startsOwn ? '' : 'doc_start\n') + body
}

/** Runs a script in bash from `dir` with the service's entry point at hand. */
async function runBlock (text: string, dir: string, server: string): Promise<{ code: number | null, stdout: string, stderr: string }> {
  const child = spawn('bash', ['-c', text], { cwd: dir, env: { ...cleanEnv(), DOC_SERVER: server }, stdio: ['ignore', 'pipe', 'pipe'] })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (chunk: Buffer) => { stdout += chunk.toString() })
  child.stderr.on('data', (chunk: Buffer) => { stderr += chunk.toString() })
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve))
  return { code, stdout, stderr }
}

/** A transcript's commands, each with the lines shown under it. */
function transcript (body: string): string[][] {
  const steps: string[][] = []
  for (const line of body.split('\n')) {
    if (line.startsWith('$ ')) steps.push([line.slice(2)])
    else if (line.trim() !== '') steps.at(-1)?.push(line.trim())
  }
  return steps
}

test('every relative link of README and docs/ names a file that exists', async (t) => {
  for (const page of pages) {
    const text = readFileSync(join(root, page), 'utf8')
    for (const match of text.matchAll(/\]\((?!https?:|mailto:|#)([^)#\s]+)(#[^)\s]*)?\)/g)) {
      const target = join(root, dirname(page), match[1] ?? '')
      t.ok(existsSync(target), `${page} links ${match[1] ?? ''}`)
    }
  }
})

test('the docs examples run against the service', async (t) => {
  // The production bundle, as `npm start` runs it, beside dist/ so that it finds package.json and public/.
  const outdir = join(root, 'dist', `.test-docs-bundle-${process.pid}`)
  t.teardown(() => { rmSync(outdir, { recursive: true, force: true }) })
  await promisify(execFile)(process.execPath, [join(root, 'scripts', 'bundle.mjs'), outdir], { env: { ...cleanEnv(), NODE_OPTIONS: '' } })
  const server = join(outdir, 'server.js')

  let ran = 0
  for (const page of pages) {
    const dir = join(root, 'test-results', 'docs', page.replace(/[/.]/g, '-'))
    rmSync(dir, { recursive: true, force: true })
    mkdirSync(dir, { recursive: true })
    // The checkout's files the examples name (`cp .env.example .env`).
    copyFileSync(join(root, '.env.example'), join(dir, '.env.example'))
    for (const block of blocksOf(page)) {
      const where = `${block.page}:${block.line}`
      const skip = /^skip (.+)$/.exec(block.directive)
      const file = /^file (\S+)$/.exec(block.directive)
      if (file !== null) {
        const name = file[1] ?? ''
        if (name.endsWith('.json')) JSON.parse(block.body)
        else parseYaml(block.body)
        writeFileSync(join(dir, name), block.body)
        continue
      }
      if (block.lang === 'text' && /^\$ /m.test(block.body) && skip === null) {
        await t.test(`${where} (transcript)`, async (t) => {
          for (const [command, ...shown] of transcript(block.body)) {
            const { stdout, stderr } = await runBlock(script(command ?? ''), dir, server)
            for (const line of shown) t.ok(`${stdout}\n${stderr}`.includes(line), `\`${command ?? ''}\` prints ${line}`)
          }
        })
        ran++
        continue
      }
      if (!SHELL.has(block.lang) && !SCRIPT.has(block.lang)) continue
      if (skip !== null) {
        t.comment(`${where}: skipped: ${skip[1] ?? ''}`)
        continue
      }
      const allowed = new Set((/^expect ([\d ]+)$/.exec(block.directive)?.[1] ?? '').split(' ').filter(Boolean).map(Number))
      let body = block.body
      if (SCRIPT.has(block.lang)) {
        writeFileSync(join(dir, `example-${block.line}.src.mjs`), block.body)
        body = `sed "s/localhost:8000/127.0.0.1:$DOC_PORT/g" example-${block.line}.src.mjs > example-${block.line}.mjs\nnode example-${block.line}.mjs\n`
      }
      await t.test(where, async (t) => {
        const { code, stdout, stderr } = await runBlock(script(body), dir, server)
        const statuses = [...stderr.matchAll(/doc-test-status (\d+)/g)].map((match) => Number(match[1]))
        const report = `\n--- stdout\n${stdout.slice(-4000)}\n--- stderr\n${stderr.slice(-4000)}`
        t.equal(code, 0, `the block runs to its end${code === 0 ? '' : report}`)
        const wrong = statuses.filter((status) => !(status >= 200 && status < 400) && !allowed.has(status))
        t.same(wrong, [], `every answer is 2xx/3xx${allowed.size > 0 ? ` or ${[...allowed].join(', ')}` : ''} (got ${statuses.join(', ') || 'no request'})${wrong.length === 0 ? '' : report}`)
        if (allowed.size > 0) t.ok(statuses.some((status) => allowed.has(status)), `the ${[...allowed].join('/')} the block shows is answered`)
        const missing = SHELL.has(block.lang) ? promisedPairs(block.body).filter((pair) => !stdout.includes(pair)) : []
        t.same(missing, [], `the answers shown in its comments are in its output${missing.length === 0 ? '' : report}`)
      })
      ran++
    }
  }
  t.ok(ran > 20, `${ran} examples ran`)
})
