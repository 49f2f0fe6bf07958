// Hooks are the only instrumentation channel: approvals and fallbacks reach the Prometheus hook through the run
// hooks (RunHooks.approval, ModelCallHooks.fallback), composed like every other hook.
import { test } from 'tap'
import { composeRunHooks, watchFirstCall, type RunHooks } from '../../lib/agent/hooks.js'
import { createMetricsHooks, type RunMetrics } from '../../lib/metrics/hooks.js'

function counters () {
  const counted: string[] = []
  const counter = (name: string) => ({ inc: (labels: Record<string, string>) => { counted.push(`${name} ${Object.values(labels).join(' ')}`) } })
  const metrics: RunMetrics = {
    llmRequestDuration: { observe: () => {} },
    llmTimeToFirstToken: { observe: () => {} },
    toolCalls: counter('tool'),
    llmTokens: { inc: () => {} },
    llmFallbacks: counter('fallback'),
    toolApprovalRequests: counter('requested'),
    toolApprovals: counter('decided'),
  }
  return { metrics, counted }
}

const RUN = { owner: 'o', requestId: 'r', dialect: 'test', model: 'm', maxTokens: 1, gateway: false }

test('approvals and fallbacks arrive through the hooks, composed with other hooks', async (t) => {
  const { metrics, counted } = counters()
  const seen: string[] = []
  const other: RunHooks = {
    approval: (event) => { seen.push(event.decision) },
    runStart: () => ({ model: { start: () => undefined, fallback: (moved) => { seen.push(`${moved.from}>${moved.to}`) } }, end: () => {} }),
  }
  const hooks = composeRunHooks([createMetricsHooks(metrics), other])
  hooks.approval?.({ tool: 'mail', decision: 'requested' })
  hooks.approval?.({ tool: 'mail', decision: 'superseded' })
  // What the run's model calls see: the first-call watch keeps the fallback hook.
  const { observer } = watchFirstCall(hooks.runStart(RUN))
  observer?.model?.fallback?.({ from: 'a', to: 'b', reason: 'cooldown' })
  t.same(counted, ['requested mail', 'decided mail superseded', 'fallback a b'])
  t.same(seen, ['requested', 'superseded', 'a>b'])
})

test('a request that follows a run is told to every hook, once per link', async (t) => {
  const followed: string[] = []
  const hook = (name: string): RunHooks => ({ runStart: () => undefined, followed: ({ link }) => { followed.push(`${name} ${link}`) } })
  composeRunHooks([hook('a'), hook('b'), { runStart: () => undefined }]).followed?.({ parent: undefined, link: '00-x' })
  t.same(followed, ['a 00-x', 'b 00-x'])
})
