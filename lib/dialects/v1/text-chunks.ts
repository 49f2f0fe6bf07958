// `POST /api/v1/chat/stream` (and `stream: true` on `/api/v1/chat`): text chunks, `[DONE]`, `[ERROR] <text>`.
import type { StreamFormat } from '../../agent/stream-format.js'
import { DONE, textChunk } from '../text-chunk.js'

/** `POST /api/v1/chat/stream` (README "Endpoints"): chunks, `[DONE]`, `[ERROR] <text>`. */
export const textChunks: StreamFormat = {
  name: 'v1',
  logName: 'text',
  event: textChunk,
  // A refusal of a JSON answer ends the stream as an error (README "Structured outputs").
  done: ({ refusal }) => refusal === undefined ? DONE : [`[ERROR] Model refused: ${refusal}`],
  error: (message) => [`[ERROR] ${message}`],
  terminalError: (message) => `[ERROR] ${message}`,
}
