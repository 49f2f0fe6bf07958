// The fake Anthropic upstream of the tests, in its own process: FAKE_TOKENS tokens per reply, FAKE_DELAY_MS between them.
// A request that asks for JSON (`output_config.format`, as the service passes a client's schema on) gets a value the
// schema accepts instead of prose, so the structured-output row measures the check at work, not its 502.
import { FakeAnthropic } from '../../dist/test/fake-anthropic/server.js'
import { offlineJson } from '../../dist/lib/llm/providers/offline/json-value.js'
import { replyWords } from '../lib/structured.js'

const tokens = Number(process.env.FAKE_TOKENS ?? 50)
const delayMs = Number(process.env.FAKE_DELAY_MS ?? 0)
const words = replyWords(tokens)

class BenchFake extends FakeAnthropic {
  /** With a format and no script: a scripted text, the JSON the offline model builds from the schema (its strings are the reply's words), in `tokens` deltas paced as the default reply. */
  async answer (record, script, reply) {
    const schema = script === undefined ? record.body.output_config?.format?.schema : undefined
    if (schema === undefined) return await super.answer(record, script, reply)
    const text = offlineJson({ type: 'json_schema', schema }, words)
    return await super.answer(record, { kind: 'text', text, chunks: tokens, chunkDelayMs: delayMs, delayMs }, reply)
  }
}

const fake = await new BenchFake({ tokensPerReply: tokens, delayMs }).listen()
// The fake records every request for the tests; forget them so a long run does not grow it.
setInterval(() => { fake.requests.length = 0 }, 1000).unref()

const stop = () => { fake.close().finally(() => process.exit(0)) }
process.once('SIGTERM', stop)
process.once('SIGINT', stop)
process.send?.({ type: 'ready', port: Number(new URL(fake.url).port) })
