// Durable runs (DECISIONS 21): every RUN_LEASE_SECONDS / 2 (and once at start) this replica claims the durable runs whose
// owner's lease lapsed and continues each from its last checkpoint, or ends it (cancelled, lost).
import { randomUUID } from 'node:crypto'
import fp from 'fastify-plugin'
import type { FastifyBaseLogger, FastifyInstance } from 'fastify'
import { parseCheckpoint, parseRecord } from '../lib/agent/durable.js'
import type { StreamFormat } from '../lib/agent/stream-format.js'
import { UsageTally } from '../lib/agent/usage.js'
import { approvalMatcher } from '../lib/config/approval-policy.js'
import { agentEvents } from '../lib/dialects/agent-events/format.js'
import { createUiMessageStream, uiDeltaText, uiStreamState } from '../lib/dialects/ui/format.js'
import { estimateTokens } from '../lib/llm/tokens.js'
import type { ClaimedStream, DurableStreams, StreamEntry } from '../lib/stores/stream-log/types.js'
import { streamLogSink } from '../lib/http/run-sinks.js'
import { eventOf, outputTextDelta } from '../lib/dialects/openai/background.js'
import { builderOf, responsesEvents, type ToolSourceOf } from '../lib/dialects/openai/responses.js'
import { keepEnding, type BackgroundStores } from '../lib/dialects/openai/background-ending.js'

/** A format whose runs can be durable: the text of a stored model-text payload, and the format a new owner goes on in. */
interface DurableFormat {
  tokenText: (payload: string) => string | undefined
  /** The format continuing a claimed run after its stored payloads; `modelInterrupted`: its model call was cut. */
  resume: (claim: ClaimedStream, durable: DurableStreams, modelInterrupted: boolean) => Promise<StreamFormat>
  /** After this process ended the run (its last event written): what the format keeps besides the log, for `identity`. */
  ended?: (identity: string, id: string) => Promise<void>
}

/** The formats whose runs can be durable, by the name the stream log records (their `logName`, not the dialect's). */
const DURABLE_FORMATS: ReadonlyMap<string, DurableFormat> = new Map<string, DurableFormat>([
  ['agent', { tokenText: agentTokenText, resume: async () => agentEvents }],
  // The UI stream's format has state (its message id, the open text part and step): read back from what was stored.
  ['ui', {
    tokenText: uiDeltaText,
    resume: async (claim, durable, modelInterrupted) => {
      const stored = uiStreamState((await durable.range(claim.id, 0, claim.lastId)).map((entry) => entry.payload))
      return createUiMessageStream({ messageId: stored.messageId ?? randomUUID(), continued: { ...stored, modelInterrupted } })
    },
  }],
])

/**
 * A background response's Responses event stream (17, 21), going on after the events its former owners stored; once
 * ended here, its final object is kept in the responses store as the fresh path keeps it.
 */
function backgroundResponses (sourceOf: ToolSourceOf, stores: BackgroundStores): DurableFormat {
  return {
    tokenText: outputTextDelta,
    resume: async (claim, durable) => {
      const events = (await durable.range(claim.id, 0, claim.lastId)).map((entry) => eventOf(entry.payload) ?? {})
      const created = events[0]?.['response'] as Record<string, unknown> | undefined
      if (created === undefined) throw new Error('background response without its response.created event')
      const builder = builderOf(created, claim.attempt)
      return responsesEvents({ model: String(created['model']), builder, sourceOf, background: true, resumeFrom: events }).format
    },
    ended: async (identity, id) => { await keepEnding(stores, identity, id) },
  }
}

/** The text of an agent stream `token` event, else undefined. */
function agentTokenText (payload: string): string | undefined {
  try {
    const event = JSON.parse(payload) as { type?: unknown, data?: unknown }
    return event.type === 'token' && typeof event.data === 'string' ? event.data : undefined
  } catch {
    return undefined
  }
}

function createDurableRuns (app: FastifyInstance, durable: DurableStreams) {
  const { config } = app
  const retrySafe = approvalMatcher(config.retrySafePatterns)
  const maxAttempts = config.RUN_MAX_RECOVERIES + 1
  const formats: ReadonlyMap<string, DurableFormat> = new Map([
    ...DURABLE_FORMATS, ['openai-responses', backgroundResponses((name) => app.tools.sourceOf(name), app.stores)],
  ])

  /** What the run's format keeps besides the log once this process ended the run (a failure is logged: a reader keeps it later). */
  async function ended (claim: ClaimedStream, identity: string | undefined, log: FastifyBaseLogger): Promise<void> {
    const keep = formats.get(claim.format)?.ended
    if (keep === undefined || identity === undefined) return
    await keep(identity, claim.id).catch((error: unknown) => { log.error({ err: error }, 'keeping the ended run failed') })
  }

  /** Ends a claimed run that is not continued: its usage so far, then `Cancelled` or `Stream interrupted`. */
  async function end (claim: ClaimedStream, message: string, usage: UsageTally | undefined): Promise<void> {
    const producer = durable.adopt(claim)
    const durableFormat = formats.get(claim.format)
    const format = durableFormat === undefined ? undefined : await durableFormat.resume(claim, durable, false)
    const payloads = format === undefined || usage === undefined
      ? [message === 'Cancelled' ? claim.cancelledPayload : claim.interruptedPayload]
      : format.error(message, usage.report())
    for (const payload of payloads.slice(0, -1)) producer.append(payload)
    await producer.finish(payloads.at(-1) ?? '')
  }

  /**
   * Continues a claimed run from its last checkpoint on this process, or ends it as lost when it cannot be;
   * `outage`: claimed by the first sweep after Redis was unreachable (claimed as lost).
   */
  async function takeOver (claim: ClaimedStream, outage: boolean): Promise<void> {
    const log = app.log.child({ streamId: claim.id, attempt: claim.attempt })
    const stored = parseCheckpoint(claim.checkpoint)
    const record = parseRecord(claim.record)
    const durableFormat = formats.get(claim.format)
    const usage = stored === null ? undefined : new UsageTally(stored.state.usage)
    if (claim.outcome === 'cancelled') {
      log.info('durable run cancelled while it had no owner: ended')
      await end(claim, 'Cancelled', usage)
      await ended(claim, record?.identity, log)
      return
    }
    if (claim.outcome === 'lost' || stored === null || record === null || durableFormat === undefined) {
      const reason = claim.outcome !== 'lost' ? 'checkpoint unreadable' : outage ? 'owner died while Redis was unreachable' : 'RUN_MAX_RECOVERIES reached'
      log.warn({ reason }, 'durable run lost')
      app.metrics.runRecoveries.inc({ outcome: 'lost' })
      await end(claim, 'Stream interrupted', usage)
      await ended(claim, record?.identity, log)
      return
    }
    const { state, boundary } = stored
    // What the interrupted model call had streamed after the checkpoint: readers drop it (`discarded_text`).
    const after: StreamEntry[] = await durable.range(claim.id, claim.checkpointId, claim.lastId)
    const discardedText = after.map((entry) => durableFormat.tokenText(entry.payload) ?? '').join('')
    const modelInterrupted = boundary === 'start' || boundary === 'tools_done'
    const format = await durableFormat.resume(claim, durable, modelInterrupted)
    if (modelInterrupted && usage !== undefined) {
      // 19's estimate of what it was sent, one token per 4 characters of what it wrote; the run's source becomes `estimated`.
      usage.add(state.settings.model, { input_tokens: estimateTokens(state.turns), output_tokens: Math.ceil(discardedText.length / 4) }, 'estimated', config.prices.get(state.settings.model))
    }
    const producer = durable.adopt(claim)
    const tracked = app.resumable.track(claim.id, record.identity, producer, true)
    // Nobody reads it yet: it counts as a detached run of its identity, never cancelled for that limit.
    app.stores.detachedRuns.detach(record.identity, claim.id, Number.MAX_SAFE_INTEGER).catch(() => {})
    app.metrics.runRecoveries.inc({ outcome: 'resumed' })
    log.info({ boundary, discardedChars: discardedText.length }, 'durable run taken over')
    const context = {
      owner: record.identity,
      requestId: randomUUID(),
      log,
      signal: tracked.signal,
      afterResponse: (task: () => void) => { setImmediate(task) },
    }
    const run = app.agent.service.prepareRecovery(context, state, {
      boundary,
      attempt: claim.attempt,
      discardedText,
      retrySafe,
      link: claim.link === '' ? undefined : claim.link,
      interrupted: (tool) => { app.metrics.toolCalls.inc({ tool, outcome: 'interrupted' }) },
    }, record.conversationId, format.name)
    await app.agent.service.stream(context, run, format, streamLogSink({ producer, signal: tracked.signal, done: tracked.done }))
    await ended(claim, record.identity, log)
  }

  let sweeping = false
  const leaseMs = config.RUN_LEASE_SECONDS * 1000
  /** When a sweep last found Redis unreachable, and whether one did since the last sweep that reached it. */
  let unreachableAt = -Infinity
  let afterOutage = false
  /** Claims what lapsed and runs each claimed run (not awaited: a sweep never waits for a run). */
  async function sweep (): Promise<void> {
    if (sweeping || app.lifecycle.draining) return
    // Redis was unreachable a moment ago: live owners first renew the leases that lapsed meanwhile (no takeover of them).
    if (performance.now() - unreachableAt < leaseMs) return
    sweeping = true
    try {
      // Runs still lapsed after an outage end as lost (DECISIONS 21, "Redis down"): their owner died while nothing could
      // be stored, maybe during a tool call whose start was not stored. Claims beyond the first attempt end as lost.
      const outage = afterOutage
      const claims = await durable.claimLapsed(outage ? 1 : maxAttempts)
      afterOutage = false
      for (const claim of claims) {
        takeOver(claim, outage).catch((error: unknown) => { app.log.error({ err: error, streamId: claim.id }, 'durable run takeover failed') })
      }
    } catch (error) {
      unreachableAt = performance.now()
      // Once per outage: what an operator needs to know of it.
      if (!afterOutage) app.log.warn({ err: error }, 'durable run sweep: Redis unreachable; runs whose owner dies meanwhile end as lost once it is back')
      else app.log.debug({ err: error }, 'durable run sweep failed')
      afterOutage = true
    } finally {
      sweeping = false
    }
  }
  return { sweep }
}

declare module 'fastify' {
  interface FastifyInstance { durableRuns: { sweep: () => Promise<void> } | undefined }
}

export default fp(async (app) => {
  const durable = app.stores.streamLog.durable
  if (!app.config.DURABLE_RUNS || durable === undefined) {
    app.decorate('durableRuns', undefined)
    return
  }
  const runs = createDurableRuns(app, durable)
  app.decorate('durableRuns', runs)
  // Both series exist from startup.
  app.metrics.runRecoveries.inc({ outcome: 'resumed' }, 0)
  app.metrics.runRecoveries.inc({ outcome: 'lost' }, 0)
  let timer: NodeJS.Timeout | undefined
  app.addHook('onReady', async () => {
    // Once as soon as the replica has started, then every RUN_LEASE_SECONDS / 2.
    runs.sweep().catch(() => {})
    timer = setInterval(() => { runs.sweep().catch(() => {}) }, app.config.RUN_LEASE_SECONDS * 500)
    timer.unref()
  })
  app.addHook('preClose', async () => { clearInterval(timer) })
}, { name: 'durable-runs', dependencies: ['config', 'stores', 'metrics', 'resumable', 'agent'], fastify: '5.x' })
