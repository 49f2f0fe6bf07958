// The agent service without Fastify or HTTP: a whole run, tools included, through plain ports; its state is JSON;
// hooks see every model call, tool call and the end; a hook can refuse a model call before it is made.
import { test } from 'tap'
import type { RunHooks, RunInfo } from '../../lib/agent/hooks.js'
import { createAgentService, type AgentPorts, type EventSink, type RunContext } from '../../lib/agent/service.js'
import { isRunState } from '../../lib/agent/state.js'
import { HttpError } from '../../lib/domain/errors.js'
import { findArithmeticExpression } from '../../lib/llm/arithmetic-in-text.js'
import { createOfflineProvider } from '../../lib/llm/providers/offline/provider.js'
import { createModelRouter } from '../../lib/llm/router.js'
import { createMemoryConversationLog, createMemorySessionStore } from '../../lib/stores/sessions/memory.js'
import { agentEvents } from '../../lib/dialects/agent-events/format.js'
import { CALCULATOR_TOOL, KNOWLEDGE_BASE_TOOL } from '../../lib/tools/builtin.js'
import { BUILT_IN_DOCUMENTS, createKnowledgeBase } from '../../lib/tools/knowledge-base.js'
import { createToolRegistry } from '../../lib/tools/registry.js'

const silent = { info () {}, warn () {}, error () {} }

function context (owner = 'alice'): RunContext {
  return { owner, requestId: 'req-1', log: silent, signal: new AbortController().signal, afterResponse: (task) => { setImmediate(task) } }
}

function ports (hooks: RunHooks[] = []) {
  const kb = createKnowledgeBase(BUILT_IN_DOCUMENTS)
  const offline = createOfflineProvider({
    knowledgeKeys: kb.keys(),
    findExpression: findArithmeticExpression,
    toolNames: { calculator: CALCULATOR_TOOL, knowledgeBase: KNOWLEDGE_BASE_TOOL },
  })
  const sessions = createMemorySessionStore({ ttlSeconds: 60, maxSessions: 10 })
  const conversations = createMemoryConversationLog({ maxEntries: 10 })
  const value: AgentPorts = {
    sessions,
    conversations,
    tools: createToolRegistry(kb),
    hooks: () => ({ runStart: (run) => hooks.flatMap((hook) => hook.runStart(run) ?? [])[0] }),
    provider: createModelRouter({ models: [], defaultProvider: offline, cooldownSeconds: 0 }),
    settings: {
      defaultModel: 'offline',
      temperature: 0.7,
      maxIterations: 5,
      maxToolCallsPerTurn: 32,
      memoryMaxTokens: 100_000,
      defaultMaxTokens: () => 1024,
    },
  }
  return value
}

test('a whole run with a tool call, no Fastify: JSON result, memory saved, conversation logged, state is plain JSON', async (t) => {
  const seen: string[] = []
  let info: RunInfo | undefined
  const hooks: RunHooks = {
    runStart (run) {
      info = run
      return {
        model: { start: (target) => { seen.push(`model ${target.name}`); return { end: (end) => { seen.push(`model end ${end.outcome}`) } } } },
        toolCall: (call) => { seen.push(`tool ${call.name} ${call.source}`); return { end: (end) => { seen.push(`tool end ${end.result}`) } } },
        end: (end) => { seen.push(`run end ${end.outcome} ${[...end.usageByModel.keys()].join()}`) },
      }
    },
  }
  const p = ports([hooks])
  const service = createAgentService(p)
  const result = await service.json(context(), {
    messages: [{ role: 'user', content: 'what is 6*7?' }], tools: 'all', memory: { id: 's1', save: 'turns' },
  }, 'test')
  t.match(result.content, /42/)
  t.same(result.toolCalls, [{ tool: CALCULATOR_TOOL, args: { expression: '6*7' }, result: '42', is_error: false }])
  t.equal(result.state.status, 'final')
  t.equal(result.state.steps, 2, 'two model calls')
  t.ok(isRunState(JSON.parse(JSON.stringify(result.state))), 'the state survives JSON')
  t.same(seen, [
    'model offline', 'model end ok', `tool ${CALCULATOR_TOOL} builtin`, 'tool end 42', 'model offline', 'model end ok', 'run end final offline',
  ], 'hooks saw both model calls, the tool call and the end, in order')
  t.equal(info?.owner, 'alice')
  t.equal(info?.dialect, 'test')
  t.equal(info?.conversationId, 's1')
  const stored = await p.sessions.get('alice', 's1')
  t.equal(stored?.turns.length, 4, 'user, tool call, tool result, answer saved')
  await new Promise((resolve) => setImmediate(resolve))
  const logged = await p.conversations.recent(1)
  t.equal(logged[0]?.identity, 'alice')
})

test('a stream into a plain sink: events in order, usage then done', async (t) => {
  const service = createAgentService(ports())
  const payloads: string[] = []
  const controller = new AbortController()
  const sink: EventSink = {
    signal: controller.signal,
    logAfterResponse: false,
    send: (payload) => { payloads.push(payload); return undefined },
    end: async (ending) => { payloads.push(...ending) },
    abortMessage: () => undefined,
    close: () => {},
  }
  const run = await service.prepare(context(), { messages: [{ role: 'user', content: 'what is 2+3?' }], tools: 'all' }, 'agent')
  await service.stream(context(), run, agentEvents, sink)
  const types = payloads.map((payload) => (JSON.parse(payload) as { type: string }).type)
  t.same(types.slice(0, 2), ['tool_call', 'tool_result'])
  t.same(types.slice(-2), ['usage', 'done'])
  t.ok(types.includes('token'))
})

test('a hook that refuses a model call stops the run before the call; the error reaches the caller', async (t) => {
  let calls = 0
  const refuse: RunHooks = {
    runStart: () => ({
      model: { start: () => { calls++; throw new HttpError(429, 'Budget exceeded: tokens per minute', { 'retry-after': '60' }) } },
      end: () => {},
    }),
  }
  const service = createAgentService(ports([refuse]))
  await t.rejects(service.json(context(), { messages: [{ role: 'user', content: 'hi' }], tools: [] }, 'test'), new HttpError(429, 'Budget exceeded: tokens per minute'))
  t.equal(calls, 1)
})

test('gateway mode: one call offering the client tools; its tool calls wait for the client', async (t) => {
  const service = createAgentService(ports())
  const result = await service.json(context(), {
    messages: [{ role: 'user', content: '/lookup {"city": "Paris"}' }],
    tools: 'all',
    clientTools: [{ name: 'lookup', description: 'look up', input_schema: { type: 'object', properties: { city: { type: 'string' } } } }],
  }, 'test')
  t.equal(result.state.status, 'tool_calls_pending')
  t.same(result.state.pending.map((call) => [call.name, call.kind, call.input]), [['lookup', 'client', { city: 'Paris' }]])
  t.same(result.toolCalls, [], 'nothing ran on the server')
})
