// Graceful shutdown (README "Deployment"): drain, give in-flight work a grace period, then close what is left.
import type { FastifyInstance } from 'fastify'

/**
 * On SIGTERM/SIGINT: health turns 503, the listener stops accepting, in-flight requests and streams get
 * `graceSeconds`; then open streams get their error message and every connection is closed. Exit code 0.
 */
export function installGracefulShutdown (app: FastifyInstance, graceSeconds: number, exit: (code: number) => void = process.exit) {
  let shuttingDown = false
  const shutdown = async (signal: string) => {
    if (shuttingDown) return
    shuttingDown = true
    app.log.info({ signal, graceSeconds }, 'shutting down: draining in-flight requests')
    app.lifecycle.draining = true
    const closed = app.close()
    let timer: NodeJS.Timeout | undefined
    const graceOver = new Promise<'timeout'>((resolve) => { timer = setTimeout(resolve, graceSeconds * 1000, 'timeout') })
    // Keep-alive connections that carry no request (clients open spares) would hold close() until the
    // deadline: once nothing is in flight, close every connection.
    const idle = setInterval(() => { if (app.lifecycle.inFlight === 0) app.server.closeAllConnections() }, 50)
    const outcome = await Promise.race([closed.then(() => 'closed' as const), graceOver])
    clearTimeout(timer)
    clearInterval(idle)
    if (outcome === 'timeout') {
      app.log.warn('grace period over: closing remaining streams and connections')
      app.lifecycle.forceClose()
      app.server.closeAllConnections()
      await closed
    }
    app.log.info('shutdown complete')
    ;(app.log as { flush?: () => void }).flush?.()
    exit(0)
  }
  for (const signal of ['SIGTERM', 'SIGINT'] as const) process.once(signal, () => { shutdown(signal).catch(() => exit(1)) })
}
