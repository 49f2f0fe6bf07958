// The run's state saved at every step boundary through the sink's checkpoint port (DECISIONS 21), and a run
// continued from a checkpoint: a started call is not run again (or is, when retry-safe), a finished result is reused.
import { test } from 'tap'
import { createAgentService, type AgentPorts, type EventSink, type RunContext } from '../../lib/agent/service.js'
import { INTERRUPTED_TOOL_TEXT, type CheckpointBoundary } from '../../lib/agent/run.js'
import { isRunState, type RunState } from '../../lib/agent/state.js'
import { findArithmeticExpression } from '../../lib/llm/arithmetic-in-text.js'
import { createOfflineProvider } from '../../lib/llm/providers/offline/provider.js'
import { createModelRouter } from '../../lib/llm/router.js'
import { createMemoryConversationLog, createMemorySessionStore } from '../../lib/stores/sessions/memory.js'
import { agentEvents } from '../../lib/dialects/agent-events/format.js'
import { CALCULATOR_TOOL, KNOWLEDGE_BASE_TOOL } from '../../lib/tools/builtin.js'
import { BUILT_IN_DOCUMENTS, createKnowledgeBase } from '../../lib/tools/knowledge-base.js'
import { createToolRegistry } from '../../lib/tools/registry.js'

const silent = { info () {}, warn () {}, error () {} }
const context = (): RunContext => ({ owner: 'alice', requestId: 'r', log: silent, signal: new AbortController().signal, afterResponse: (task) => { setImmediate(task) } })

function ports (): AgentPorts {
  const kb = createKnowledgeBase(BUILT_IN_DOCUMENTS)
  const offline = createOfflineProvider({ knowledgeKeys: kb.keys(), findExpression: findArithmeticExpression, toolNames: { calculator: CALCULATOR_TOOL, knowledgeBase: KNOWLEDGE_BASE_TOOL } })
  return {
    sessions: createMemorySessionStore({ ttlSeconds: 60, maxSessions: 10 }),
    conversations: createMemoryConversationLog({ maxEntries: 10 }),
    tools: createToolRegistry(kb),
    hooks: () => ({ runStart: () => undefined }),
    provider: createModelRouter({ models: [], defaultProvider: offline, cooldownSeconds: 0 }),
    settings: { defaultModel: 'offline', temperature: 0.7, maxIterations: 5, maxToolCallsPerTurn: 32, memoryMaxTokens: 100_000, defaultMaxTokens: () => 1024 },
  }
}

/** A sink that keeps payloads and, with `saved`, every checkpoint as JSON with the payload count at that moment. */
function sink (saved?: Array<{ boundary: CheckpointBoundary, json: string, sent: number }>) {
  const payloads: string[] = []
  const value: EventSink = {
    signal: new AbortController().signal,
    send: (payload) => { payloads.push(payload); return undefined },
    end: async (ending) => { payloads.push(...ending) },
    abortMessage: () => undefined,
    close: () => {},
    logAfterResponse: false,
    ...(saved === undefined ? {} : { checkpoint: async (boundary: CheckpointBoundary, state: RunState) => { saved.push({ boundary, json: JSON.stringify(state), sent: payloads.length }) } }),
  }
  return { value, payloads }
}

const types = (payloads: string[]) => payloads.map((p) => (JSON.parse(p) as { type: string }).type)

test('every step boundary is saved, after the events before it; a plain sink saves nothing and sends the same', async (t) => {
  const service = createAgentService(ports())
  const saved: Array<{ boundary: CheckpointBoundary, json: string, sent: number }> = []
  const durable = sink(saved)
  const spec = { messages: [{ role: 'user' as const, content: 'what is 6*7?' }], tools: 'all' as const }
  await service.stream(context(), await service.prepare(context(), spec, 'agent'), agentEvents, durable.value)
  t.same(saved.map((s) => s.boundary), ['start', 'model_done', 'tools_started', 'tool_done', 'tools_done', 'model_done', 'end'])
  const started = saved[2]
  t.same(types(durable.payloads.slice(0, started?.sent)), ['tool_call'], 'the call\'s start event went out before the tools_started checkpoint')
  for (const one of saved) t.ok(isRunState(JSON.parse(one.json)), `${one.boundary}: a state of the current shape`)
  const toolDone = JSON.parse(saved[3]?.json ?? '{}') as RunState
  t.same(toolDone.results.map((r) => r.content), ['42'], 'the result is saved as it comes')
  const plain = sink()
  await service.stream(context(), await service.prepare(context(), spec, 'agent'), agentEvents, plain.value)
  t.same(plain.payloads, durable.payloads, 'the same stream with and without checkpoints')
})

test('the shape check refuses a state of the current version with another shape', async (t) => {
  t.notOk(isRunState({ version: 1, settings: {}, turns: [] }))
  t.notOk(isRunState({ version: 2 }))
})

test('continued from tools_started: the started call gets the interrupted text (or runs again when retry-safe); from tool_done its result is reused', async (t) => {
  const service = createAgentService(ports())
  const saved: Array<{ boundary: CheckpointBoundary, json: string, sent: number }> = []
  const spec = { messages: [{ role: 'user' as const, content: 'what is 6*7?' }], tools: 'all' as const }
  await service.stream(context(), await service.prepare(context(), spec, 'agent'), agentEvents, sink(saved).value)
  const at = (boundary: CheckpointBoundary) => JSON.parse(saved.find((s) => s.boundary === boundary)?.json ?? '{}') as RunState
  const interruptedCalls: string[] = []
  for (const [boundary, retry, expected] of [
    ['tools_started', false, INTERRUPTED_TOOL_TEXT], ['tools_started', true, '42'], ['tool_done', false, '42'],
  ] as const) {
    const out = sink()
    const run = service.prepareRecovery(context(), at(boundary), {
      boundary, attempt: 2, discardedText: '', retrySafe: () => retry, interrupted: (tool) => { interruptedCalls.push(tool) },
    }, 'c1', 'agent')
    await service.stream(context(), run, agentEvents, out.value)
    const events = out.payloads.map((p) => JSON.parse(p) as { type: string, data: { content?: string, interrupted?: boolean, attempt?: number } })
    t.same(events[0], { type: 'recovered', data: { attempt: 2, discarded_text: '' } }, `${boundary}: the marker first`)
    t.same(events[1]?.type, 'tool_result', 'no second start event')
    t.equal(events[1]?.data.content, expected.slice(0, 200))
    t.equal(events[1]?.data.interrupted, expected === INTERRUPTED_TOOL_TEXT ? true : undefined)
    t.same(types(out.payloads).slice(2), ['token', ...types(out.payloads).slice(3, -2), 'usage', 'done'])
  }
  t.same(interruptedCalls, [CALCULATOR_TOOL])
})
