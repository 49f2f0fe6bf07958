// Traces of POST /api/v1/agui: a server span named by the route, the agent span carrying the thread as its conversation id.
import { test } from 'tap'
import { buildFakeApp, listen, postJson } from '../helpers/fake-app.js'
import { startOtlpReceiver, SPAN_KIND, named } from '../helpers/otlp-receiver.js'
import { collectSpans } from '../helpers/tracing.js'
import { readAguiStream } from '../helpers/agui.js'

test('an AG-UI run: server span POST /api/v1/agui, the agent span\'s gen_ai.conversation.id is the threadId', async (t) => {
  const receiver = await startOtlpReceiver()
  t.teardown(() => receiver.close())
  const { app, fake } = await buildFakeApp(t, { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: receiver.url })
  const base = await listen(t, app)
  fake.enqueue({ kind: 'text', text: 'Hello.' })
  const response = await postJson(`${base}/api/v1/agui`, { threadId: 'thread-traced', runId: 'run-traced', messages: [{ id: 'u', role: 'user', content: 'hi' }] })
  const events = await readAguiStream(response)
  t.equal(events.at(-1)?.type, 'RUN_FINISHED')
  const spans = await collectSpans(app, receiver, (all) => all.length >= 3)
  const server = named(spans, 'POST /api/v1/agui')
  t.equal(server.length, 1, `one server span (${spans.map((span) => span.name).join(', ')})`)
  t.equal(server[0]?.kind, SPAN_KIND.SERVER)
  const agent = spans.find((span) => span.name.startsWith('invoke_agent'))
  t.equal(agent?.attributes['gen_ai.conversation.id'], 'thread-traced')
})
