// Every stream format is named by its dialect's folder (the run hooks' RunInfo.dialect), and keeps the name the stream
// log records (its `logName`): stored in Redis and read back by the replica that takes over a durable run (DECISIONS 21),
// so those values must not change with the folders' names.
import { test } from 'tap'
import type { StreamFormat } from '../../lib/agent/stream-format.js'
import { agentEvents } from '../../lib/dialects/agent-events/format.js'
import { createAguiStream } from '../../lib/dialects/agui/format.js'
import { DIALECTS } from '../../lib/dialects/names.js'
import { chatCompletionChunks } from '../../lib/dialects/openai/chat-completions.js'
import { responseBuilder, responsesEvents } from '../../lib/dialects/openai/responses.js'
import { sessionChunks } from '../../lib/dialects/session/format.js'
import { createUiMessageStream } from '../../lib/dialects/ui/format.js'
import { textChunks } from '../../lib/dialects/v1/text-chunks.js'

const formats: ReadonlyArray<{ format: StreamFormat, folder: string, logName: string }> = [
  { format: agentEvents, folder: 'agent-events', logName: 'agent' },
  { format: createAguiStream({ threadId: 't', runId: 'r', providerOf: () => 'offline' }), folder: 'agui', logName: 'agui' },
  { format: chatCompletionChunks({ model: 'm', includeUsage: false }), folder: 'openai', logName: 'openai-chat' },
  { format: responsesEvents({ model: 'm', builder: responseBuilder({}), sourceOf: () => undefined }).format, folder: 'openai', logName: 'openai-responses' },
  { format: sessionChunks, folder: 'session', logName: 'session' },
  { format: createUiMessageStream({ messageId: 'm' }), folder: 'ui', logName: 'ui' },
  { format: textChunks, folder: 'v1', logName: 'text' },
]

test('each stream format is named by its folder and keeps the name the stream log records', async (t) => {
  t.same(formats.map(({ format }) => format.name), formats.map(({ folder }) => folder), 'names are folders')
  t.same(formats.map(({ format }) => format.logName), formats.map(({ logName }) => logName), 'the stored names as before')
  t.same([...new Set(formats.map(({ folder }) => folder))], [...DIALECTS], 'every dialect has a format here')
})
