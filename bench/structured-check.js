// `node bench/structured-check.js [checks] [--json]`: what the structured-output check itself costs per answer (issue 42
// item 4), on the features row's schema and on a typical client schema (bench/lib/structured.js). No server: the
// service's own modules from the build (dist/lib/input), in this process. Per schema: CPU of compiling it (the first
// check of a schema not seen yet; once per schema, then cached), of one cached check on the calling thread
// (lib/input/json-answer.ts: parse, hash lookup, Ajv), and of one check the way a request makes it (json-check.ts:
// posted to the checker thread and answered, `checks` of them 100 at a time; CPU of both threads), beside a bare
// JSON.parse of the answer (what any JSON answer costs).
import { checkAnswer, compiledCount } from '../dist/lib/input/json-answer.js'
import { checkAnswerOffLoop, stopChecker } from '../dist/lib/input/json-check.js'
import { offlineJson } from '../dist/lib/llm/providers/offline/json-value.js'
import { median } from './lib/streams.js'
import { REPLY_SCHEMA, TYPICAL, replyWords } from './lib/structured.js'

const checks = Number(process.argv.find((arg) => /^\d+$/.test(arg)) ?? 20000)
const asJson = process.argv.includes('--json')
const cpuUs = () => {
  const { user, system } = process.cpuUsage()
  return user + system
}
const format = (schema) => ({ type: 'json_schema', name: 'reply', schema, strict: false })

/** CPU µs per call of `fn` over `n` calls, after `n / 10` calls of warm-up. */
function perCall (n, fn) {
  for (let i = 0; i < n / 10; i++) fn()
  const start = cpuUs()
  for (let i = 0; i < n; i++) fn()
  return (cpuUs() - start) / n
}

async function measure (name, schema, answer) {
  const wanted = format(schema)
  const first = checkAnswer(answer, wanted)
  if (!first.ok) throw new Error(`${name}: the answer fails its schema: ${first.problems.join('; ')}`)
  // Compiling: the first check of schemas not seen yet (the same schema, each with another $comment).
  const compileUs = median(Array.from({ length: 20 }, (_, i) => {
    const fresh = format({ ...schema, $comment: `bench ${name} ${i}` })
    const start = cpuUs()
    checkAnswer(answer, fresh)
    return cpuUs() - start
  }))
  const parseUs = perCall(checks, () => JSON.parse(answer))
  const compiledBefore = compiledCount()
  const inThreadUs = perCall(checks, () => checkAnswer(answer, wanted))
  const compiledDuring = compiledCount() - compiledBefore
  // As a request checks: posted to the worker, 100 in flight.
  const offLoop = async (n) => {
    await Promise.all(Array.from({ length: 100 }, async () => {
      for (let i = 0; i < n / 100; i++) await checkAnswerOffLoop(answer, wanted)
    }))
  }
  await offLoop(checks / 10)
  const start = cpuUs()
  await offLoop(checks)
  const offLoopUs = (cpuUs() - start) / checks
  return { name, schemaBytes: JSON.stringify(schema).length, answerBytes: answer.length, compileUs, parseUs, inThreadUs, offLoopUs, compiledDuring }
}

const results = [
  await measure('features row (one string)', REPLY_SCHEMA, offlineJson(format(REPLY_SCHEMA), replyWords(50))),
  await measure('typical (7 fields, nested, enum, pattern, date-time)', TYPICAL.schema, TYPICAL.answer),
]
await stopChecker()
if (asJson) console.log(JSON.stringify({ checks, results }))
else {
  for (const r of results) {
    console.log(`${r.name}: schema ${r.schemaBytes} B, answer ${r.answerBytes} B; CPU µs: compile ${r.compileUs.toFixed(0)} (once per schema), ` +
      `check ${r.inThreadUs.toFixed(1)} on the calling thread (JSON.parse alone ${r.parseUs.toFixed(1)}), ${r.offLoopUs.toFixed(1)} through the checker thread; ` +
      `compiled during ${checks} checks: ${r.compiledDuring}`)
  }
}
