// The worker thread that compiles and runs structured-output checks (json-answer.ts), so that neither a large schema's
// compilation (seconds for a 64 KB schema) nor an answer's check ever runs on the service's event loop.
import { parentPort } from 'node:worker_threads'
import { checkAnswer } from './json-answer.js'
import type { OutputFormat } from '../domain/output-format.js'

/** A check asked of the worker: the answer's raw text and the format (the schema as JSON text). */
export interface CheckRequest { id: number, text: string, format: string }

parentPort?.on('message', (request: CheckRequest) => {
  try {
    const result = checkAnswer(request.text, JSON.parse(request.format) as OutputFormat)
    // The value is parsed again by the caller: a structured clone of it would cost as much.
    parentPort?.postMessage({ id: request.id, result: result.ok ? { ok: true, text: result.text } : result })
  } catch (error) {
    parentPort?.postMessage({ id: request.id, error: error instanceof Error ? error.message : String(error) })
  }
})
