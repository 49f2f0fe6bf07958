// Reference for the OpenAI provider: the obvious proxy a team would write. Fastify (no logger, no validation,
// no limits) in front of the `openai` SDK with its defaults (global fetch). JSON route = chat.completions.create;
// SSE route = a streamed completion writing `data: <text>` lines.
import OpenAI from 'openai'
import Fastify from 'fastify'

const model = process.env.BENCH_MODEL ?? 'bench-model'
const maxTokens = Number(process.env.BENCH_MAX_TOKENS ?? 4096)
const client = new OpenAI({ apiKey: process.env.UPSTREAM_KEY ?? 'bench-upstream-key', baseURL: process.env.UPSTREAM_URL })

const app = Fastify()

app.post('/api/v1/chat', async (request) => {
  const completion = await client.chat.completions.create({ model, max_tokens: maxTokens, messages: request.body.messages })
  const usage = { input_tokens: completion.usage?.prompt_tokens ?? 0, output_tokens: completion.usage?.completion_tokens ?? 0 }
  return { content: completion.choices[0]?.message.content ?? '', model: completion.model, usage }
})

app.post('/api/v1/chat/stream', async (request, reply) => {
  reply.hijack()
  reply.raw.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' })
  try {
    const stream = await client.chat.completions.create({ model, max_tokens: maxTokens, messages: request.body.messages, stream: true })
    for await (const chunk of stream) {
      const text = chunk.choices[0]?.delta?.content
      if (text) reply.raw.write(`data: ${text}\n\n`)
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
