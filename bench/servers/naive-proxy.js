// Reference: the obvious proxy a team would write. Fastify (no logger, no validation, no limits) in front
// of @anthropic-ai/sdk with its defaults (global fetch). JSON route = messages.create; SSE route =
// messages.stream() writing `data: <text>` lines.
import Anthropic from '@anthropic-ai/sdk'
import Fastify from 'fastify'

const model = process.env.BENCH_MODEL ?? 'claude-sonnet-5-5'
const maxTokens = Number(process.env.BENCH_MAX_TOKENS ?? 4096)
// NAIVE_FETCH=node: the same proxy on the service's lean transport (dist/lib/llm/node-fetch.js), to separate
// what the transport buys from what the service's own layers cost.
const transport = process.env.NAIVE_FETCH === 'node' ? (await import('../../dist/lib/llm/node-fetch.js')).createNodeFetch() : undefined
const client = new Anthropic({
  apiKey: process.env.UPSTREAM_KEY ?? 'bench-upstream-key',
  baseURL: process.env.UPSTREAM_URL,
  ...(transport ? { fetch: transport.fetch } : {}),
})

const app = Fastify()

app.post('/api/v1/chat', async (request) => {
  const message = await client.messages.create({ model, max_tokens: maxTokens, messages: request.body.messages })
  const content = message.content.map((block) => (block.type === 'text' ? block.text : '')).join('')
  return { content, model: message.model, usage: message.usage }
})

app.post('/api/v1/chat/stream', async (request, reply) => {
  reply.hijack()
  reply.raw.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' })
  try {
    const stream = client.messages.stream({ model, max_tokens: maxTokens, messages: request.body.messages })
    for await (const event of stream) {
      if (event.type === 'content_block_delta' && event.delta.type === 'text_delta') reply.raw.write(`data: ${event.delta.text}\n\n`)
    }
    reply.raw.write('data: [DONE]\n\n')
  } catch (error) {
    reply.raw.write(`data: [ERROR] ${error.message}\n\n`)
  }
  reply.raw.end()
})

await app.listen({ host: '127.0.0.1', port: 0 })

const stop = () => { app.close().finally(() => process.exit(0)) }
process.once('SIGTERM', stop)
process.once('SIGINT', stop)
process.send?.({ type: 'ready', port: app.server.address().port })
