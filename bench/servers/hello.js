// Reference: a bare Fastify hello route, nothing else (no logger, no hooks).
import Fastify from 'fastify'

const app = Fastify()
app.get('/api/v1/health', async () => ({ status: 'ok', version: 'bench' }))
await app.listen({ host: '127.0.0.1', port: 0 })

const stop = () => { app.close().finally(() => process.exit(0)) }
process.once('SIGTERM', stop)
process.once('SIGINT', stop)
process.send?.({ type: 'ready', port: app.server.address().port })
