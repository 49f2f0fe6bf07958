// Structured-output checks off the event loop (README "Structured outputs"): one worker thread holds the compiled
// validators (json-answer.ts, compiled once per schema, LRU) and runs every schema check; the event loop only posts.
import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { Worker } from 'node:worker_threads'
import type { OutputFormat } from '../domain/output-format.js'
import { checkAnswer, type AnswerCheck } from './json-answer.js'

/** The worker's file beside this module (`.js` built or bundled; `.ts` when the sources run as they are, in tests). */
function workerFile (): URL {
  const built = new URL('./json-check-worker.js', import.meta.url)
  return existsSync(fileURLToPath(built)) ? built : new URL('./json-check-worker.ts', import.meta.url)
}

let worker: Worker | undefined
let nextId = 0
const waiting = new Map<number, { resolve: (check: AnswerCheck) => void, reject: (error: Error) => void }>()

function started (): Worker {
  if (worker !== undefined) return worker
  const created = new Worker(workerFile())
  // An idle worker does not keep the process alive (shutdown, tests).
  created.unref()
  created.on('message', (message: { id: number, result?: { ok: true, text: string } | { ok: false, problems: string[] }, error?: string }) => {
    const pending = waiting.get(message.id)
    if (pending === undefined) return
    waiting.delete(message.id)
    if (message.result === undefined) pending.reject(new Error(`Structured output check failed: ${message.error ?? 'unknown error'}`))
    else if (message.result.ok) pending.resolve({ ok: true, text: message.result.text, value: JSON.parse(message.result.text) as unknown })
    else pending.resolve(message.result)
    if (waiting.size === 0) created.unref()
  })
  const fail = (error: Error): void => {
    if (worker === created) worker = undefined
    for (const pending of waiting.values()) pending.reject(error)
    waiting.clear()
  }
  created.on('error', fail)
  created.on('exit', (code) => { fail(new Error(`Structured output checker exited (${code})`)) })
  worker = created
  return created
}

/**
 * Checks a model's final text against `format`: `json_object` at once (a parse), a schema in the worker (compiled once
 * per schema there). Resolves with the JSON text alone and its value, or the problems.
 */
export async function checkAnswerOffLoop (raw: string, format: OutputFormat): Promise<AnswerCheck> {
  // No schema to run: a parse, on the loop (checkAnswer does it without compiling anything).
  if (format.type === 'json_object') return checkAnswer(raw, format)
  const thread = started()
  thread.ref()
  const id = nextId++
  return await new Promise<AnswerCheck>((resolve, reject) => {
    waiting.set(id, { resolve, reject })
    thread.postMessage({ id, text: raw, format: JSON.stringify(format) })
  })
}

/** Stops the worker (tests; it is unref'd, so a process exits without this). */
export async function stopChecker (): Promise<void> {
  const current = worker
  worker = undefined
  await current?.terminate()
}
