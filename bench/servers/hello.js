// Reference: a bare Fastify hello route, nothing else (no hooks). HELLO_LOG=1: Fastify's own request logging
// (pino, level info, to /dev/null), the "bare Fastify with the request log line on" of the health budget.
import Fastify from 'fastify'
import pino from 'pino'

const logged = process.env.HELLO_LOG === '1'
const app = Fastify(logged ? { loggerInstance: pino({ level: 'info' }, pino.destination({ dest: '/dev/null', sync: true })) } : {})
app.get('/api/v1/health', async () => ({ status: 'ok', version: 'bench' }))
await app.listen({ host: '127.0.0.1', port: 0 })

const stop = () => { app.close().finally(() => process.exit(0)) }
process.once('SIGTERM', stop)
process.once('SIGINT', stop)
process.send?.({ type: 'ready', port: app.server.address().port })
