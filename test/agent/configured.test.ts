// The agent service as the settings set it up (lib/agent/configured.ts), without Fastify: run defaults from the config,
// and tool approval on only when TOOL_APPROVAL_REQUIRED names a tool.
import { test } from 'tap'
import { configuredAgentService, type AgentParts } from '../../lib/agent/configured.js'
import type { RunContext } from '../../lib/agent/service.js'
import { loadConfig } from '../../lib/config/config.js'
import type { LLMProvider } from '../../lib/llm/types.js'
import type { RunStore } from '../../lib/stores/runs/types.js'
import { createMemoryConversationLog } from '../../lib/stores/conversations/memory.js'
import { createMemorySessionStore } from '../../lib/stores/sessions/memory.js'
import { CALCULATOR_TOOL, KNOWLEDGE_BASE_TOOL } from '../../lib/tools/builtin.js'
import { BUILT_IN_DOCUMENTS, createKnowledgeBase } from '../../lib/tools/knowledge-base.js'
import { createToolRegistry } from '../../lib/tools/registry.js'
import { TEST_ENV } from '../helpers/app.js'

const context: RunContext = {
  owner: 'alice', requestId: 'r', log: { info () {}, warn () {}, error () {} }, signal: new AbortController().signal, afterResponse: (task) => { setImmediate(task) },
}

/** A run's preparation calls neither the model nor (without an approval scope) the paused-run store. */
const parts: AgentParts = {
  sessions: createMemorySessionStore({ ttlSeconds: 60, maxSessions: 10 }),
  conversations: createMemoryConversationLog({ maxEntries: 10 }),
  tools: createToolRegistry(createKnowledgeBase(BUILT_IN_DOCUMENTS)),
  hooks: () => ({ runStart: () => undefined }),
  provider: {} as LLMProvider,
  runs: {} as RunStore,
  defaultMaxTokens: () => 321,
}

const hello = { messages: [{ role: 'user' as const, content: 'hi' }], tools: 'all' as const }

test('a run takes its defaults from the config; no tool waits for approval unless one is named', async (t) => {
  const config = loadConfig({ env: { ...TEST_ENV, MODEL_TEMPERATURE: '0.25' } })
  const { service, needsApproval } = configuredAgentService(config, parts)
  t.equal(needsApproval(CALCULATOR_TOOL), false)
  const run = await service.prepare(context, hello, 'test')
  t.match(run.state.settings, { model: config.defaultModel, temperature: 0.25, maxTokens: 321 })
  t.same([...run.state.settings.tools].sort(), [CALCULATOR_TOOL, KNOWLEDGE_BASE_TOOL].sort())
})

test('TOOL_APPROVAL_REQUIRED gates the tools it names: a run that cannot pause is not offered them', async (t) => {
  const config = loadConfig({ env: { ...TEST_ENV, TOOL_APPROVAL_REQUIRED: CALCULATOR_TOOL } })
  const { service, needsApproval } = configuredAgentService(config, parts)
  t.equal(needsApproval(CALCULATOR_TOOL), true)
  t.equal(needsApproval(KNOWLEDGE_BASE_TOOL), false)
  const run = await service.prepare(context, hello, 'test')
  t.same(run.state.settings.tools, [KNOWLEDGE_BASE_TOOL])
})
