// The fake OpenAI-compatible upstream of the tests, in its own process: FAKE_TOKENS tokens per reply, FAKE_DELAY_MS between them.
import { startFakeOpenAI } from '../../dist/test/fake-openai/server.js'

const fake = await startFakeOpenAI({
  tokensPerReply: Number(process.env.FAKE_TOKENS ?? 50),
  delayMs: Number(process.env.FAKE_DELAY_MS ?? 0),
})
// The fake records every request for the tests; forget them so a long run does not grow it.
setInterval(() => { fake.requests.length = 0 }, 1000).unref()

const stop = () => { fake.close().finally(() => process.exit(0)) }
process.once('SIGTERM', stop)
process.once('SIGINT', stop)
process.send?.({ type: 'ready', port: Number(new URL(fake.url).port) })
