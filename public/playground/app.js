// Agent Chat playground: a small useChat-like client of POST /api/v1/ui/chat (UI message stream), no dependencies.

const CHAT_API = '/api/v1/ui/chat'
const STORE = { chatId: 'playground.chatId', messages: 'playground.messages', pending: 'playground.pending', model: 'playground.model' }
const KEY_STORE = 'playground.apiKey'

const $ = (id) => /** @type {HTMLElement} */ (document.getElementById(id))
const log = $('log')
const empty = $('empty')
const errorBox = $('error')
const form = /** @type {HTMLFormElement} */ ($('composer'))
const input = /** @type {HTMLTextAreaElement} */ ($('message'))
const sendButton = /** @type {HTMLButtonElement} */ ($('send'))
const stopButton = /** @type {HTMLButtonElement} */ ($('stop'))
const modelSelect = /** @type {HTMLSelectElement} */ ($('model'))
const keyInput = /** @type {HTMLInputElement} */ ($('api-key'))

/**
 * @typedef {{ type: string, text?: string, state?: string, toolCallId?: string, toolName?: string,
 *   input?: unknown, output?: unknown, errorText?: string }} Part
 * @typedef {{ model?: string, usage?: { input_tokens: number, output_tokens: number } }} Metadata
 * @typedef {{ id: string, role: 'user' | 'assistant', parts: Part[], metadata?: Metadata, interrupted?: boolean }} Message
 */

/** @type {{ chatId: string, messages: Message[], busy: boolean, controller: AbortController | null, cancelUrl: string | null }} */
const state = {
  chatId: localStorage.getItem(STORE.chatId) || newId(),
  messages: readMessages(),
  busy: false,
  controller: null,
  cancelUrl: null,
}

function newId () {
  return crypto.randomUUID().replace(/-/g, '').slice(0, 16)
}

/** @returns {Message[]} */
function readMessages () {
  try {
    const stored = JSON.parse(localStorage.getItem(STORE.messages) || '[]')
    return Array.isArray(stored) ? stored : []
  } catch {
    return []
  }
}

function save () {
  localStorage.setItem(STORE.chatId, state.chatId)
  localStorage.setItem(STORE.messages, JSON.stringify(state.messages))
}

function authHeaders () {
  const key = keyInput.value.trim()
  return key ? { authorization: `Bearer ${key}` } : {}
}

// ---------- errors ----------

function showError (text) {
  errorBox.textContent = text
  errorBox.hidden = false
}

function clearError () {
  errorBox.hidden = true
  errorBox.textContent = ''
}

/** A readable text for a failed HTTP answer: `{detail: "..."}`, `{detail: [{loc, msg}]}` or the raw body. */
async function describeFailure (response) {
  const body = await response.text().catch(() => '')
  let text = body
  try {
    const json = JSON.parse(body)
    if (typeof json.detail === 'string') text = json.detail
    else if (Array.isArray(json.detail)) text = json.detail.map((d) => `${(d.loc || []).join('.')}: ${d.msg}`).join('\n')
    else if (json.message) text = json.message
  } catch {}
  const what = text || response.statusText
  const hint = response.status === 401 ? `${/[.!?]$/.test(what) ? '' : '.'} Enter a valid API key above.` : ''
  return `Request failed (${response.status}): ${what}${hint}`
}

// ---------- rendering ----------

/** @param {string} tag @param {string} [className] @param {string} [text] */
function el (tag, className, text) {
  const node = document.createElement(tag)
  if (className) node.className = className
  if (text !== undefined) node.textContent = text
  return node
}

function pretty (value) {
  if (typeof value === 'string') return value
  try {
    return JSON.stringify(value, null, 2)
  } catch {
    return String(value)
  }
}

/** @param {Part} part */
function renderTool (part) {
  const name = part.type === 'dynamic-tool' ? part.toolName : part.type.slice('tool-'.length)
  const box = el('details', 'tool')
  box.open = true
  box.dataset.state = part.state || ''
  const summary = el('summary')
  summary.append(el('span', 'badge', 'tool'), el('span', 'name', name))
  const status = part.state === 'output-available'
    ? el('span', 'status ok', 'done')
    : part.state === 'output-error'
      ? el('span', 'status bad', 'failed')
      : part.state === 'output-denied'
        ? el('span', 'status bad', 'denied')
        : part.state === 'approval-requested'
          ? el('span', 'status wait', 'needs approval')
          : part.state === 'approval-responded' ? el('span', 'status', part.approval && part.approval.approved ? 'approved' : 'denied') : el('span', 'status', 'running…')
  summary.append(status)
  const details = el('dl')
  details.append(el('dt', '', 'Input'))
  const inputValue = el('dd')
  inputValue.append(el('pre', 'tool-input', pretty(part.input)))
  details.append(inputValue)
  if (part.state === 'output-available' || part.state === 'output-error') {
    details.append(el('dt', '', part.state === 'output-error' ? 'Error' : 'Result'))
    const output = el('dd')
    output.append(el('pre', 'tool-output', part.state === 'output-error' ? part.errorText : pretty(part.output)))
    details.append(output)
  }
  box.append(summary, details)
  // A call waiting for a person: Approve runs it exactly as shown, Deny tells the model no (README "Tool approval").
  if (part.state === 'approval-requested') {
    const actions = el('div', 'approval')
    const approve = el('button', 'approve', 'Approve')
    const deny = el('button', 'deny', 'Deny')
    approve.type = 'button'
    deny.type = 'button'
    approve.disabled = state.busy
    deny.disabled = state.busy
    approve.addEventListener('click', () => { answer(part, true) })
    deny.addEventListener('click', () => { answer(part, false) })
    actions.append(approve, deny)
    box.append(actions)
  }
  return box
}

/** @param {Message} message @param {boolean} streaming */
function renderMessage (message, streaming) {
  const node = el('article', `msg ${message.role}`)
  node.dataset.id = message.id
  node.setAttribute('aria-label', message.role === 'user' ? 'You' : 'Assistant')
  const parts = message.parts.filter((p) => p.type !== 'step-start')
  parts.forEach((part, index) => {
    if (part.type === 'text') {
      const bubble = el('div', 'bubble', part.text)
      if (streaming && index === parts.length - 1 && part.state === 'streaming') bubble.classList.add('streaming')
      node.append(bubble)
    } else if (part.type.startsWith('tool-') || part.type === 'dynamic-tool') {
      node.append(renderTool(part))
    }
  })
  if (message.role === 'assistant' && parts.length === 0 && streaming) node.append(el('div', 'bubble streaming', ''))
  if (message.interrupted) node.append(el('p', 'notice', 'Reply interrupted.'))
  const meta = message.metadata
  if (meta && meta.model) {
    const usage = meta.usage ? ` · ${meta.usage.input_tokens} in / ${meta.usage.output_tokens} out tokens` : ''
    node.append(el('p', 'meta', `${meta.model}${usage}`))
  }
  return node
}

let frame = 0
function render () {
  if (frame) return
  frame = window.requestAnimationFrame(() => {
    frame = 0
    const nearBottom = log.scrollHeight - log.scrollTop - log.clientHeight < 80
    const last = state.messages.at(-1)
    log.replaceChildren(...(state.messages.length === 0 ? [empty] : state.messages.map((m) => renderMessage(m, state.busy && m === last))))
    if (nearBottom || state.busy) log.scrollTop = log.scrollHeight
    sendButton.disabled = state.busy
    stopButton.hidden = !state.busy
  })
}

// ---------- the UI message stream ----------

/** Yields the `data` of each SSE message of a fetch body. */
async function * sseData (body, signal) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader()
  const onAbort = () => { reader.cancel().catch(() => {}) }
  signal?.addEventListener('abort', onAbort)
  let buffer = ''
  try {
    for (;;) {
      const { done, value } = await reader.read()
      if (done) break
      buffer += value
      const blocks = buffer.split(/\r\n\r\n|\n\n|\r\r/)
      buffer = blocks.pop() ?? ''
      for (const block of blocks) {
        const data = block.split(/\r\n|\n|\r/).filter((line) => line.startsWith('data:')).map((line) => line.slice(5).replace(/^ /, ''))
        if (data.length > 0) yield data.join('\n')
      }
    }
  } finally {
    signal?.removeEventListener('abort', onAbort)
  }
}

/**
 * Applies the chunks of a UI message stream to the assistant message; a replay (`start` naming a message
 * we have) starts that message over.
 * @returns {Promise<'finished' | 'error' | 'cut'>}
 */
async function consume (response, signal, continueId) {
  /** @type {Message | undefined} */
  let message
  for await (const data of sseData(response.body, signal)) {
    if (data === '[DONE]') break
    let chunk
    try {
      chunk = JSON.parse(data)
    } catch {
      continue
    }
    if (chunk.type === 'start') {
      const id = chunk.messageId || newId()
      const known = state.messages.findIndex((m) => m.id === id)
      const last = state.messages.at(-1)
      // An answer to approvals continues the assistant message it answers: its parts stay.
      if (known !== -1 && id === continueId) {
        message = state.messages[known]
        continue
      }
      message = { id, role: 'assistant', parts: [] }
      if (known !== -1) state.messages[known] = message
      else if (last && last.role === 'assistant' && last.interrupted) state.messages[state.messages.length - 1] = message
      else state.messages.push(message)
      continue
    }
    if (!message) {
      message = { id: newId(), role: 'assistant', parts: [] }
      state.messages.push(message)
    }
    const parts = message.parts
    const tool = (id) => parts.find((p) => p.toolCallId === id)
    switch (chunk.type) {
      case 'start-step': parts.push({ type: 'step-start' }); break
      case 'text-start': parts.push({ type: 'text', text: '', state: 'streaming', id: chunk.id }); break
      case 'text-delta': {
        const part = parts.findLast((p) => p.type === 'text' && p.id === chunk.id)
        if (part) part.text += chunk.delta
        else parts.push({ type: 'text', text: chunk.delta, state: 'streaming', id: chunk.id })
        break
      }
      case 'text-end': {
        const part = parts.findLast((p) => p.type === 'text' && p.id === chunk.id)
        if (part) part.state = 'done'
        break
      }
      case 'tool-input-available':
        parts.push({ type: `tool-${chunk.toolName}`, toolCallId: chunk.toolCallId, state: 'input-available', input: chunk.input })
        break
      case 'tool-output-available': {
        const part = tool(chunk.toolCallId)
        if (part) Object.assign(part, { state: 'output-available', output: chunk.output })
        break
      }
      case 'tool-output-error': {
        const part = tool(chunk.toolCallId)
        if (part) Object.assign(part, { state: 'output-error', errorText: chunk.errorText })
        break
      }
      case 'tool-approval-request': {
        const part = tool(chunk.toolCallId)
        if (part) Object.assign(part, { state: 'approval-requested', approval: { id: chunk.approvalId } })
        break
      }
      case 'tool-output-denied': {
        const part = tool(chunk.toolCallId)
        if (part) part.state = 'output-denied'
        break
      }
      case 'error':
        showError(chunk.errorText)
        save()
        render()
        return 'error'
      case 'finish':
        if (chunk.messageMetadata) message.metadata = chunk.messageMetadata
        save()
        render()
        return 'finished'
      default:
        break
    }
    save()
    render()
  }
  return 'cut'
}

/** Runs one request (a new reply, or a reconnect) to its end, keeping the page state in step. */
async function stream (makeRequest, continueId) {
  state.busy = true
  state.cancelUrl = null
  localStorage.setItem(STORE.pending, '1')
  const controller = new AbortController()
  state.controller = controller
  render()
  try {
    const response = await makeRequest(controller.signal)
    if (response === null) return
    const location = response.headers.get('content-location')
    if (location) state.cancelUrl = `${location}/cancel`
    const outcome = await consume(response, controller.signal, continueId)
    if (outcome === 'cut' && !controller.signal.aborted) markInterrupted()
  } catch (error) {
    if (controller.signal.aborted) return
    markInterrupted()
    showError(error instanceof Error ? `Connection failed: ${error.message}` : String(error))
  } finally {
    if (state.controller === controller) {
      state.busy = false
      state.controller = null
      localStorage.removeItem(STORE.pending)
      render()
    }
  }
}

function markInterrupted () {
  const last = state.messages.at(-1)
  if (last && last.role === 'assistant') {
    last.interrupted = true
    for (const part of last.parts) if (part.state === 'streaming') part.state = 'done'
  }
  save()
}

/** The UI messages as the server reads them (no page-only fields). */
function wireMessages () {
  return state.messages.filter((m) => !m.interrupted).map(({ id, role, parts }) => ({
    id,
    role,
    parts: parts.map(({ id: _partId, ...part }) => part),
  }))
}

async function send (text) {
  if (state.busy) return
  clearError()
  // An unfinished reply stays on the page but is not sent back (wireMessages): the model starts over.
  const message = { id: newId(), role: /** @type {const} */ ('user'), parts: [{ type: 'text', text }] }
  state.messages.push(message)
  save()
  const model = modelSelect.value
  await stream(async (signal) => {
    const response = await fetch(CHAT_API, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...authHeaders() },
      body: JSON.stringify({ id: state.chatId, messages: wireMessages(), trigger: 'submit-message', ...(model ? { model } : {}) }),
      signal,
    })
    if (!response.ok || !response.body) {
      showError(await describeFailure(response))
      // Refused (no key, bad input, busy): the message was not taken; it goes back to the textbox.
      state.messages = state.messages.filter((m) => m !== message)
      if (!input.value) input.value = text
      save()
      return null
    }
    return response
  })
}

/**
 * Answers one call waiting for approval; once every waiting call of the reply is answered, sends the answers
 * (the parts in state approval-responded) and the reply goes on in the same message.
 */
async function answer (part, approved) {
  if (state.busy || part.state !== 'approval-requested') return
  clearError()
  part.state = 'approval-responded'
  part.approval = { ...part.approval, approved }
  save()
  render()
  const last = state.messages.at(-1)
  if (!last || last.role !== 'assistant' || last.parts.some((p) => p.state === 'approval-requested')) return
  const model = modelSelect.value
  await stream(async (signal) => {
    const response = await fetch(CHAT_API, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...authHeaders() },
      body: JSON.stringify({ id: state.chatId, messages: wireMessages(), trigger: 'submit-message', ...(model ? { model } : {}) }),
      signal,
    })
    if (!response.ok || !response.body) {
      showError(await describeFailure(response))
      return null
    }
    return response
  }, last.id)
}

/** After a reload: follows the reply that was underway, from its start (204: nothing is running). */
async function resume () {
  await stream(async (signal) => {
    const response = await fetch(`${CHAT_API}/${encodeURIComponent(state.chatId)}/stream`, { headers: authHeaders(), signal })
    if (response.status === 204 || response.status === 404) {
      markInterrupted()
      return null
    }
    if (!response.ok || !response.body) {
      showError(await describeFailure(response))
      return null
    }
    return response
  })
}

function stop () {
  const cancelUrl = state.cancelUrl
  state.controller?.abort()
  if (cancelUrl) fetch(cancelUrl, { method: 'POST', headers: authHeaders() }).catch(() => {})
  state.busy = false
  state.controller = null
  localStorage.removeItem(STORE.pending)
  markInterrupted()
  render()
}

function newChat () {
  if (state.busy) stop()
  state.chatId = newId()
  state.messages = []
  clearError()
  save()
  render()
  input.focus()
}

// ---------- models ----------

function modelOption (label, value) {
  const option = document.createElement('option')
  option.textContent = label
  option.value = value
  return option
}

async function loadModels () {
  const stored = localStorage.getItem(STORE.model)
  try {
    const response = await fetch('/api/v1/models', { headers: authHeaders() })
    if (response.ok) {
      const { data } = await response.json()
      const options = data.map((m) => {
        const option = modelOption(m.default ? `${m.id} (default)` : m.id, m.id)
        if (m.owned_by) option.title = `from ${m.owned_by}`
        return option
      })
      modelSelect.replaceChildren(...options)
      const choice = data.find((m) => m.id === stored) ?? data.find((m) => m.default) ?? data[0]
      if (choice) modelSelect.value = choice.id
      return
    }
    if (response.status === 401) showError(await describeFailure(response))
  } catch {}
  // No model list (older service, or no key yet): the default model, named by the health endpoint.
  let name = 'default model'
  try {
    const health = await (await fetch('/api/v1/health')).json()
    if (typeof health.version === 'string') name = health.version
  } catch {}
  modelSelect.replaceChildren(modelOption(name, ''))
}

// ---------- wiring ----------

form.addEventListener('submit', (event) => {
  event.preventDefault()
  const text = input.value.trim()
  if (!text || state.busy) return
  input.value = ''
  autosize()
  send(text)
})

input.addEventListener('keydown', (event) => {
  if (event.key === 'Enter' && !event.shiftKey && !event.isComposing) {
    event.preventDefault()
    form.requestSubmit()
  }
})

function autosize () {
  input.style.height = 'auto'
  input.style.height = `${Math.min(input.scrollHeight + 2, 180)}px`
}
input.addEventListener('input', autosize)

for (const button of document.querySelectorAll('.example')) {
  button.addEventListener('click', () => {
    input.value = button.textContent ?? ''
    form.requestSubmit()
  })
}

stopButton.addEventListener('click', stop)
$('new-chat').addEventListener('click', newChat)
modelSelect.addEventListener('change', () => localStorage.setItem(STORE.model, modelSelect.value))

keyInput.value = sessionStorage.getItem(KEY_STORE) ?? ''
keyInput.addEventListener('change', () => {
  sessionStorage.setItem(KEY_STORE, keyInput.value.trim())
  clearError()
  loadModels()
})

window.addEventListener('error', (event) => showError(`Something went wrong on this page: ${event.message}`))
window.addEventListener('unhandledrejection', (event) => showError(`Something went wrong on this page: ${event.reason}`))

render()
loadModels()
if (localStorage.getItem(STORE.pending)) resume()
input.focus()
