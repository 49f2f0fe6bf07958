// The /v1 routes' run spec on the agent service without HTTP: `tools: 'ungated'` leaves out every tool that needs approval.
import { test } from 'tap'
import { createAgentService, type AgentPorts, type RunContext } from '../../lib/agent/service.js'
import { findArithmeticExpression } from '../../lib/llm/arithmetic-in-text.js'
import { createOfflineProvider } from '../../lib/llm/providers/offline/provider.js'
import { createModelRouter } from '../../lib/llm/router.js'
import { createMemoryConversationLog, createMemorySessionStore } from '../../lib/stores/sessions/memory.js'
import { CALCULATOR_TOOL, KNOWLEDGE_BASE_TOOL } from '../../lib/tools/builtin.js'
import { BUILT_IN_DOCUMENTS, createKnowledgeBase } from '../../lib/tools/knowledge-base.js'
import { createToolRegistry } from '../../lib/tools/registry.js'

const silent = { info () {}, warn () {}, error () {} }
const context: RunContext = { owner: 'alice', requestId: 'req-1', log: silent, signal: new AbortController().signal, afterResponse: (task) => { setImmediate(task) } }

function ports (needsApproval: (name: string) => boolean): AgentPorts {
  const kb = createKnowledgeBase(BUILT_IN_DOCUMENTS)
  const offline = createOfflineProvider({
    knowledgeKeys: kb.keys(),
    findExpression: findArithmeticExpression,
    toolNames: { calculator: CALCULATOR_TOOL, knowledgeBase: KNOWLEDGE_BASE_TOOL },
  })
  return {
    sessions: createMemorySessionStore({ ttlSeconds: 60, maxSessions: 10 }),
    conversations: createMemoryConversationLog({ maxEntries: 10 }),
    tools: createToolRegistry(kb),
    hooks: () => ({ runStart: () => undefined }),
    provider: createModelRouter({ models: [], defaultProvider: offline, cooldownSeconds: 0 }),
    settings: { defaultModel: 'offline', temperature: 0.7, maxIterations: 5, maxToolCallsPerTurn: 32, memoryMaxTokens: 100_000, defaultMaxTokens: () => 1024 },
    needsApproval,
  }
}

test("tools: 'ungated' offers every tool except those that need approval", async (t) => {
  const service = createAgentService(ports((name) => name === CALCULATOR_TOOL))
  const run = await service.prepare(context, { messages: [{ role: 'user', content: 'hi' }], tools: 'ungated' }, 'test')
  t.same(run.state.settings.tools, [KNOWLEDGE_BASE_TOOL])
  // A run that cannot pause (no approval scope) never offers a gated tool, whichever way it names its tools.
  const all = await service.prepare(context, { messages: [{ role: 'user', content: 'hi' }], tools: 'all' }, 'test')
  t.same(all.state.settings.tools, [KNOWLEDGE_BASE_TOOL])
  const result = await service.json(context, { messages: [{ role: 'user', content: 'what is 6*7?' }], tools: 'ungated' }, 'test')
  t.same(result.toolCalls, [], 'the gated calculator is never offered, so never called')
  t.equal(result.state.status, 'final')
})
