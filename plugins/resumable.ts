// Resumable streams plugin (README "Resumable streams"): opens a stream in the event log and follows it over SSE; detached runs end on shutdown.
import { randomUUID } from 'node:crypto'
import fp from 'fastify-plugin'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { followStream, resumeUrl, streamStoreDown, type FollowOptions, type FollowSource, type StreamLayout } from '../lib/http/resumable.js'
import type { SseWriter } from '../lib/http/sse.js'
import { HANDOVER, type StreamProducer } from '../lib/stores/stream-log/types.js'
import type { StreamFormat } from '../lib/agent/stream-format.js'

/** A resumable stream as its route runs it. */
export interface OpenedStream {
  /** The stream id (`X-Stream-Id`). */
  id: string
  producer: StreamProducer
  /** Aborts the run: a cancel (from any replica) or shutdown. The client leaving does not. */
  signal: AbortSignal
  /** The original connection, one more follower of the log; resolves when it has ended. */
  followed: Promise<void>
  /** Call when the run has finished (whatever the outcome). */
  done (): void
}

/** How often this process refreshes the leases of its detached runs (a third of their 30 s lease, lib/stores/detached-runs/). */
const DETACHED_REFRESH_MS = 10_000

function createResumable (app: FastifyInstance) {
  /** Runs going on here, and whether each is durable (handed over at shutdown rather than ended). */
  const runs = new Map<AbortController, boolean>()
  /** Runs started here and still going: their owner and how many readers follow them on this process. */
  const local = new Map<string, { owner: string, readers: number }>()
  app.lifecycle.onForceClose(() => {
    // A durable run is handed over (DECISIONS 21): its readers' connections close without a terminal event.
    for (const [run, durable] of runs) run.abort(new DOMException(durable ? HANDOVER : 'Server is shutting down', 'AbortError'))
  })

  // Keeps the leases of this process's runs that are detached (the store ignores runs that are not).
  const refresher = setInterval(() => {
    for (const [id, run] of local) {
      app.stores.detachedRuns.refresh(run.owner, id).catch((error: unknown) => { app.log.debug({ err: error }, 'detached run refresh failed') })
    }
  }, DETACHED_REFRESH_MS)
  refresher.unref()
  app.addHook('onClose', async () => { clearInterval(refresher) })
  /** Durable runs going on here, each settled once it is done. */
  const durableRuns = new Set<Promise<void>>()
  app.addHook('preClose', async () => {
    // Draining (SIGTERM): durable runs, background ones too (no request holds the close for them), go on through the
    // grace period; when it ends they are handed over (onForceClose above) and end here.
    if (app.lifecycle.draining) await Promise.all(durableRuns)
  })

  /**
   * The last reader of a running stream left: the run goes on detached, unless its owner already has
   * MAX_DETACHED_RUNS_PER_IDENTITY detached runs; then it is cancelled as by POST <resume URL>/cancel. A background
   * response is never cancelled by it (DECISIONS 7 as amended by 21: its limit is the 429 at create): it only counts.
   */
  async function readerLeft (id: string, owner: string, background: boolean): Promise<void> {
    const run = local.get(id)
    if (run !== undefined) {
      if (run.readers > 0) return
    } else {
      // Started on another replica: only a stream still running counts.
      const info = await app.stores.streamLog.info(id, owner)
      if (info?.state !== 'running') return
    }
    const kept = await app.stores.detachedRuns.detach(owner, id, background ? Number.MAX_SAFE_INTEGER : app.config.MAX_DETACHED_RUNS_PER_IDENTITY)
    if (kept) return
    app.log.info({ streamId: id, max: app.config.MAX_DETACHED_RUNS_PER_IDENTITY }, 'detached run cancelled: too many detached runs for its identity')
    await app.stores.streamLog.cancel(id, owner)
  }

  /**
   * Follows stream `id` of `owner` on `sse` (the starter's connection or a resumer's), from `source` (followStream):
   * while it reads, the run is attended; when it leaves before the end, {@link readerLeft}. `options.background`: a
   * background response's reader (its events renumbered by `options.payload`).
   */
  async function follow (id: string, owner: string, source: FollowSource, sse: SseWriter, options: { background?: boolean, payload?: FollowOptions['payload'] } = {}): Promise<void> {
    const run = local.get(id)
    if (run !== undefined) run.readers++
    await app.stores.detachedRuns.attach(owner, id).catch((error: unknown) => { app.log.warn({ err: error }, 'detached run attach failed') })
    const seen = { terminal: false }
    try {
      await followStream(sse, source, { seen, payload: options.payload })
    } finally {
      if (run !== undefined) run.readers--
      if (!seen.terminal && !app.lifecycle.draining) {
        await readerLeft(id, owner, options.background === true).catch((error: unknown) => { app.log.warn({ err: error, streamId: id }, 'detached run check failed') })
      }
    }
  }

  /**
   * Runs `producer`'s run on this process (a stream opened here, or a durable run taken over): the signal that stops it
   * (a cancel from any replica, shutdown) and `done` once it has finished; a durable run stopped by shutdown is handed over.
   */
  function track (id: string, owner: string, producer: StreamProducer, durable: boolean) {
    const controller = new AbortController()
    runs.set(controller, durable)
    local.set(id, { owner, readers: 0 })
    let settle = (): void => {}
    const running = new Promise<void>((resolve) => { settle = resolve })
    if (durable) durableRuns.add(running)
    const onCancel = (): void => { controller.abort(producer.cancelSignal.reason) }
    producer.cancelSignal.addEventListener('abort', onCancel, { once: true })
    return {
      signal: controller.signal,
      done () {
        runs.delete(controller)
        local.delete(id)
        durableRuns.delete(running)
        settle()
        app.stores.detachedRuns.attach(owner, id).catch((error: unknown) => { app.log.debug({ err: error }, 'detached run removal failed') })
        producer.cancelSignal.removeEventListener('abort', onCancel)
        const reason: unknown = controller.signal.reason
        if (durable && reason instanceof DOMException && reason.message === HANDOVER && producer.release !== undefined) {
          // The stream log's close waits for it (the lease would otherwise lapse, a takeover only later).
          producer.release().catch((error: unknown) => { app.log.warn({ err: error, streamId: id }, 'durable run handover failed') })
        }
      },
    }
  }

  /**
   * Records stream `id` of `owner` in `format` in the log (with `link`, the run's trace link; `durable`: its run record)
   * and tracks it as running here. A stream store that is down is a 503.
   */
  async function start (id: string, owner: string, format: StreamFormat, link: string | undefined, durable: { record: string } | undefined) {
    const producer = await app.stores.streamLog.start(id, {
      owner,
      format: format.logName,
      cancelledPayload: format.terminalError('Cancelled'),
      interruptedPayload: format.terminalError('Stream interrupted'),
      link,
      durable,
    }).catch(streamStoreDown)
    return { producer, ...track(id, owner, producer, producer.followStored !== undefined) }
  }

  return {
    follow,
    track,
    /**
     * Starts durable stream `id` with no connection of its own (a background response, DECISIONS 21): recorded in the
     * log and run on this process; readers come through the log. A stream store that is down is a 503.
     */
    async startDetached (id: string, owner: string, format: StreamFormat, record: string, link?: string) {
      return await start(id, owner, format, link, { record })
    },
    /**
     * Starts a resumable stream in `format`: records it in the log (with `link`, the run's trace link), answers with `X-Stream-Id` and
     * `Content-Location` and follows the log on this connection. A stream store that is down is a 503
     * before the stream opens.
     */
    async open (
      request: FastifyRequest, reply: FastifyReply, format: StreamFormat, layout: StreamLayout, link?: string, durable?: { record: string }
    ): Promise<OpenedStream> {
      const id = randomUUID()
      const { producer, ...tracked } = await start(id, request.identity, format, link, durable)
      reply.header('x-stream-id', id)
      reply.header('content-location', resumeUrl(layout, id))
      // No formatError: on shutdown the run itself ends the stream in the log (replayable elsewhere).
      const sse = app.sse.open(request, reply)
      // A durable run's events reach this connection too only once stored (DECISIONS 21).
      return { id, producer, signal: tracked.signal, followed: follow(id, request.identity, { producer }, sse), done: tracked.done }
    },
    /** Runs still going (with or without a client). */
    get running (): number {
      return runs.size
    },
  }
}

declare module 'fastify' {
  interface FastifyInstance { resumable: ReturnType<typeof createResumable> }
}

export default fp(async (app) => {
  app.decorate('resumable', createResumable(app))
}, { name: 'resumable', dependencies: ['config', 'lifecycle', 'stores', 'streams'], fastify: '5.x' })
