// SSE stream client on node:http with a keep-alive Agent (no fetch), so thousands of streams cost the client little.
import http from 'node:http'
import { connect } from 'node:net'

/**
 * @typedef {object} StreamTarget
 * @property {number} port
 * @property {string} path
 * @property {Record<string, string>} headers
 * @property {string} body JSON
 * @property {'anthropic' | 'openai' | 'agui' | 'agent' | 'responses'} [protocol] how tokens and the end are read: unset, every `data:` message is a
 *   token and `data: [DONE]` ends (the service's own streams); `anthropic`, a `content_block_delta` event is a token
 *   and `message_stop` ends (a Messages pass-through); `openai`, a chunk whose delta has non-empty content is a token
 *   and `data: [DONE]` ends (role and finish chunks are not tokens); `agui`, `agent` and `responses` (OpenAI's Responses
 *   events), typed JSON events (TYPED_EVENTS)
 */

/** The event types of typed JSON streams: [a token, the end] (AG-UI's, the service's agent stream's, /v1/responses'). */
const TYPED_EVENTS = {
  agui: ['TEXT_MESSAGE_CONTENT"', 'RUN_FINISHED"'],
  agent: ['token"', 'done"'],
  responses: ['response.output_text.delta"', 'response.completed"'],
}

/**
 * @typedef {object} StreamOutcome
 * @property {boolean} ok ended with `data: [DONE]`
 * @property {number} status
 * @property {number} tokens `data:` messages other than [DONE] / [ERROR]
 * @property {number} ttft ms from sending to the first token (NaN when none)
 * @property {number} total ms from sending to the end
 * @property {string} [error]
 */

/**
 * @typedef {http.Agent & { preconnect: (port: number, count: number) => Promise<void> }} StreamAgent
 */

/**
 * A keep-alive agent with no socket limit that can open its connections ahead of a burst
 * (`preconnect`), in steps: a burst of thousands of streams would otherwise also open thousands of TCP
 * connections in the same instant, a listen backlog of 511 (Node's default) would drop many of those
 * SYNs, and the test would measure the kernel's accept queue and SYN retries rather than the server.
 * @returns {StreamAgent}
 */
export function streamAgent () {
  const agent = /** @type {StreamAgent} */ (new http.Agent({ keepAlive: true, maxSockets: Infinity, maxFreeSockets: 100_000 }))
  /** @type {Map<number, import('node:net').Socket[]>} */
  const ready = new Map()
  const create = agent.createConnection.bind(agent)
  // The agent asks for a new connection: hand over one opened ahead, if there is one for that port.
  agent.createConnection = (options, callback) => ready.get(Number(options.port))?.pop() ?? create(options, callback)
  agent.preconnect = async (port, count) => {
    const name = `127.0.0.1:${port}:`
    const free = agent.freeSockets[name]?.length ?? 0
    const list = ready.get(port) ?? []
    ready.set(port, list)
    for (let opened = free + list.length; opened < count;) {
      const step = Math.min(250, count - opened)
      const sockets = await Promise.all(Array.from({ length: step }, () => new Promise((resolve) => {
        const socket = connect({ host: '127.0.0.1', port, noDelay: true })
        socket.once('connect', () => resolve(socket))
        socket.once('error', () => resolve(undefined))
      })))
      for (const socket of sockets) if (socket) list.push(socket)
      opened += step
    }
  }
  return agent
}

/**
 * Opens one stream and reads it to the end, counting `data:` messages.
 * @param {StreamTarget} target
 * @param {http.Agent} agent
 * @param {number} [timeoutMs]
 * @param {() => void} [onFirstToken] called when the first token arrives (the held-streams row waits for all of them)
 * @returns {Promise<StreamOutcome>}
 */
export function openStream (target, agent, timeoutMs = 120_000, onFirstToken) {
  const protocol = target.protocol
  const typed = protocol === 'agui' || protocol === 'agent' || protocol === 'responses' ? TYPED_EVENTS[protocol] : undefined
  return new Promise((resolve) => {
    const start = performance.now()
    let settled = false
    let ttft = NaN
    let tokens = 0
    let done = false
    let status = 0
    const firstToken = () => {
      ttft = performance.now() - start
      onFirstToken?.()
    }
    /** @param {string} [error] */
    const finish = (error) => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      const outcome = { ok: done && error === undefined, status, tokens, ttft, total: performance.now() - start }
      resolve(error === undefined ? outcome : { ...outcome, error })
    }
    const req = http.request({
      host: '127.0.0.1',
      port: target.port,
      path: target.path,
      method: 'POST',
      agent,
      headers: { ...target.headers, 'content-type': 'application/json', 'content-length': Buffer.byteLength(target.body) },
    })
    const timer = setTimeout(() => {
      req.destroy(new Error('stream timed out'))
    }, timeoutMs)
    req.on('error', (error) => finish(error.message))
    req.on('response', (res) => {
      status = res.statusCode ?? 0
      if (status !== 200) {
        res.resume()
        res.on('end', () => finish(`status ${status}`))
        return
      }
      res.setEncoding('utf8')
      let pending = ''
      res.on('data', (chunk) => {
        pending = pending === '' ? chunk : pending + chunk
        let from = 0
        let end
        // One message per blank line; only its first line matters here (`data: <payload>`).
        while ((end = pending.indexOf('\n\n', from)) !== -1) {
          // A resumable stream's message starts with its `id:` line.
          const at = pending.startsWith('id: ', from) ? pending.indexOf('\n', from) + 1 : from
          if (protocol === 'anthropic') {
            if (pending.startsWith('event: content_block_delta', at)) {
              if (tokens++ === 0) firstToken()
            } else if (pending.startsWith('event: message_stop', at)) done = true
          } else if (typed !== undefined) {
            const type = pending.indexOf('"type":"', at)
            if (type !== -1 && type < end) {
              if (pending.startsWith(typed[0], type + 8)) {
                if (tokens++ === 0) firstToken()
              } else if (pending.startsWith(typed[1], type + 8)) done = true
            }
          } else if (protocol === 'openai' && pending.startsWith('data: {', at)) {
            const delta = pending.indexOf('"content":"', at)
            // A chunk with text: its content is a non-empty string (role and finish chunks have none or "").
            if (delta !== -1 && delta < end && pending[delta + 11] !== '"' && tokens++ === 0) firstToken()
          } else if (pending.startsWith('data: ', at)) {
            if (pending.startsWith('data: [DONE]', at)) done = true
            else if (pending.startsWith('data: [ERROR]', at)) done = false
            else if (tokens++ === 0) firstToken()
          }
          from = end + 2
        }
        pending = from === 0 ? pending : pending.slice(from)
      })
      res.on('end', () => finish())
      res.on('error', (error) => finish(error.message))
      res.on('close', () => finish(res.complete ? undefined : 'connection closed early'))
    })
    req.end(target.body)
  })
}

/**
 * Opens `count` streams at once and waits for all of them.
 * @param {StreamTarget} target
 * @param {http.Agent} agent
 * @param {number} count
 */
export async function burst (target, agent, count) {
  const start = performance.now()
  const outcomes = await Promise.all(Array.from({ length: count }, () => openStream(target, agent)))
  return { outcomes, wallMs: performance.now() - start }
}

/**
 * The p-th percentile (0..100) of `values` (nearest rank); NaN when empty.
 * @param {number[]} values sorted ascending
 * @param {number} p
 */
export function percentile (values, p) {
  if (values.length === 0) return NaN
  const rank = Math.min(values.length - 1, Math.max(0, Math.ceil((p / 100) * values.length) - 1))
  return /** @type {number} */ (values[rank])
}

/**
 * The median of `values` (nearest rank, as {@link percentile}); they need not be sorted. NaN when empty.
 * @param {number[]} values
 */
export function median (values) {
  return percentile([...values].sort((a, b) => a - b), 50)
}

/**
 * Summary of a burst: completion, TTFT percentiles, token rate.
 * @param {StreamOutcome[]} outcomes
 * @param {number} wallMs
 */
export function summarizeStreams (outcomes, wallMs) {
  const ttfts = outcomes.filter((o) => !Number.isNaN(o.ttft)).map((o) => o.ttft).sort((a, b) => a - b)
  const totals = outcomes.map((o) => o.total).sort((a, b) => a - b)
  const tokens = outcomes.reduce((sum, o) => sum + o.tokens, 0)
  const errors = {}
  for (const o of outcomes) if (!o.ok) errors[o.error ?? 'no [DONE]'] = (errors[o.error ?? 'no [DONE]'] ?? 0) + 1
  return {
    streams: outcomes.length,
    completed: outcomes.filter((o) => o.ok).length,
    errors,
    tokens,
    wallSeconds: wallMs / 1000,
    tokensPerSecond: tokens / (wallMs / 1000),
    ttftP50: percentile(ttfts, 50),
    ttftP99: percentile(ttfts, 99),
    durationP50: percentile(totals, 50),
    durationP99: percentile(totals, 99),
  }
}
