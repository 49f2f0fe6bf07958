// POST /api/v1/agent/stream: the agent with every tool, as typed JSON events (README "Endpoints").
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import { requestKind } from '../../../lib/dialects/approvals.js'
import { agentEvents } from '../../../lib/dialects/agent-events/format.js'
import { chatRunSpec } from '../../../lib/dialects/v1/request.js'
import { resumableIn } from '../../../lib/http/resumable.js'
import { SseResponse, agentStreamRequestSchema, type ChatRequestBody } from '../../../schemas/chat.js'
import { modelErrorResponses } from '../../../schemas/common.js'

const agentRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.post('/agent/stream', {
    schema: {
      tags: ['agent'],
      summary: 'Run the agent with tools as an SSE stream of typed events',
      description: 'Each message is JSON `{type, data}`: tool_call `{tool, args}`, tool_result `{tool, content}` (first 200 characters), ' +
        'token (text), then usage `{input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, cost_usd, model, source}` and done (empty string); on failure usage then error (text). ' +
        'With a JSON `response_format` (README "Structured outputs"): only the checked answer is sent as token events, then ' +
        '`{type: "output", data: <the parsed value>}`; a refusal is `{type: "refusal", data: <text>}`; out of repairs: usage then ' +
        'error `Structured output invalid: …`. ' +
        'All tools are enabled unless `tools` names some. A call of a tool that needs approval (TOOL_APPROVAL_REQUIRED) does not run: ' +
        'the run pauses with one approval_required `{id, tool, args, expires_at}` per such call, then usage and done. ' +
        'Continue it with `{"approvals": [{"id", "approved", "reason"?}, ...]}` instead of `messages` (answering every pending approval ' +
        'of the turn; with at most `resumable`): 404 for an unknown, expired or foreign id, 409 for one answered before, 422 for an ' +
        'incomplete answer.',
      operationId: 'postApiV1AgentStream',
      body: agentStreamRequestSchema(app.config.models),
      response: { 200: SseResponse, 404: Type.Ref('DetailError'), 409: Type.Ref('DetailError'), ...modelErrorResponses },
    },
  }, async (request, reply) => {
    const body = request.body
    // A resumable run of this route is durable when DURABLE_RUNS is on (DECISIONS 21).
    const resumable = { ...resumableIn(body, 'versioned'), durable: true }
    if (requestKind(body, 'messages', ['model', 'temperature', 'max_tokens', 'tools', 'response_format']) === 'continuation') {
      const continuation = { family: 'agent' as const, scope: '', answers: body.approvals ?? [], loc: ['body', 'approvals'] }
      await app.agent.stream(request, reply, { continuation }, agentEvents, resumable)
      return reply
    }
    const spec = { ...chatRunSpec(body as ChatRequestBody, 'all'), approval: { family: 'agent' as const, scope: '' } }
    await app.agent.stream(request, reply, spec, agentEvents, resumable)
    return reply
  })
}

export default agentRoutes
