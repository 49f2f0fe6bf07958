// Issue 11 points 6 and 7: calculator's empty expression, /ready without driver text, one token estimator,
// no test code in the production build, compose not open by default, Node >= 22 and the Node 24 CI run.
import { test } from 'tap'
import { execFileSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { createToolRegistry } from '../../lib/tools/registry.js'
import { createKnowledgeBase } from '../../lib/tools/knowledge-base.js'
import { createOfflineProvider } from '../../lib/llm/providers/offline/provider.js'
import { estimateTextTokens, estimateTokens } from '../../lib/llm/tokens.js'
import { estimateTokens as trimEstimate } from '../../lib/stores/sessions/trim.js'
import type { ChatTurn } from '../../lib/domain/types.js'
import { buildTestApp } from '../helpers/app.js'

const root = new URL('../../', import.meta.url)
const read = (path: string) => readFileSync(new URL(path, root), 'utf8')

test('an empty calculator expression is a calculation error like any other bad expression', async (t) => {
  const registry = createToolRegistry(createKnowledgeBase({ api: 'The API.' }))
  for (const expression of ['', '   ']) {
    t.same(await registry.run('calculate_expression', { expression }), { content: 'Calculation error: the expression is empty', isError: true })
  }
  t.match(await registry.run('calculate_expression', { expression: '1 +' }), { content: /^Calculation error: /, isError: true }, 'like this one')
})

test('/ready names the failing check without the driver\'s error text, address or credentials', async (t) => {
  const { app, logs } = await buildTestApp(t, { REDIS_URL: 'redis://agent:s3cret-pass@127.0.0.1:1/0' })
  const res = await app.inject({ method: 'GET', url: '/ready' })
  t.equal(res.statusCode, 503)
  t.same(res.json(), { status: 'not_ready', checks: { redis: 'failed: unavailable' } })
  for (const secret of ['127.0.0.1', ':1', 's3cret', 'agent', 'ECONNREFUSED', 'connect']) t.notOk(res.body.includes(secret), `no ${secret}`)
  t.ok(logs.lines.some((line) => line['check'] === 'redis' && line['msg'] === 'readiness check failed'), 'the cause goes to the log')
})

test('one token estimator: offline usage counts as memory trimming does', async (t) => {
  t.equal(trimEstimate, estimateTokens, 'memory trimming uses the shared estimator')
  const provider = createOfflineProvider()
  const messages: ChatTurn[] = [
    { role: 'user', content: 'what is the answer to everything?' },
    { role: 'assistant', content: 'forty-two, they say' },
    { role: 'user', content: 'hello there' },
  ]
  const system = 'Be brief.'
  const response = await provider.complete({ model: 'offline', system, messages, maxTokens: 100 })
  t.equal(response.usage.input_tokens, estimateTextTokens(system) + estimateTokens(messages))
  const reply = response.content.map((block) => (block.type === 'text' ? block.text : '')).join('')
  t.equal(response.usage.output_tokens, estimateTextTokens(reply))
})

test('the production build carries no test code; the bench builds the fake on its own', async (t) => {
  const files = execFileSync(process.execPath, [new URL('node_modules/typescript/bin/tsc', root).pathname, '-p', 'tsconfig.build.json', '--listFilesOnly'],
    { cwd: root, encoding: 'utf8' }).split('\n').filter((line) => line.includes('/hardening/') || !line.includes('node_modules'))
  const own = files.filter((file) => file.trim() !== '' && !file.includes('node_modules'))
  t.ok(own.some((file) => file.endsWith('/server.ts')), 'the service is built')
  t.same(own.filter((file) => /\/test\//.test(file)), [], 'nothing under test/')
  t.notMatch(read('Dockerfile'), /COPY\s+test/, 'the image copies no test code')
  t.match(read('Dockerfile'), /^FROM node:24/m, 'the image runs the current LTS')
  t.match(JSON.parse(read('package.json')).scripts.bench, /tsc -p tsconfig\.bench\.json/)
  t.match(read('tsconfig.bench.json'), /test\/fake-anthropic/)
})

test('compose.yaml does not publish an open API by default', async (t) => {
  const compose = read('compose.yaml')
  t.match(compose, /- "\$\{API_BIND:-127\.0\.0\.1\}:8000:8000"/, 'port 8000 on the loopback address unless API_BIND says otherwise')
  t.notMatch(compose, /- "8000:8000"/)
  t.notMatch(compose, /- "\d+:\d+"/, 'no port published on every address')
})

test('runtime: Node 22.15 or later (the floor the dependencies declare), and CI runs the suite again on Node 24', async (t) => {
  t.equal(JSON.parse(read('package.json')).engines.node, '>=22.15.0')
  t.match(read('README.md'), /Node\.js 22\.15 or later/, 'README names the same floor')
  const ci = read('.ci/run')
  t.match(ci, /^npm test$/m, 'the README\'s command')
  t.match(ci, /EXPECT_NODE_MAJOR=24 TAP_TYPE_STRIP_ONLY=1 npx -y -p node@24 -- sh -c "node --version && npm test -- /)
  const expected = process.env['EXPECT_NODE_MAJOR']
  if (expected === undefined) {
    t.comment(`running on Node ${process.versions.node}`)
  } else {
    t.equal(process.versions.node.split('.')[0], expected, `the tests run on Node ${expected}`)
  }
})
