// POST /api/v1/agui: the agent in the AG-UI protocol 1.0 (README "AG-UI"), a RunAgentInput in, an AG-UI event stream out.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import { EXPIRED_TEXT, SUPERSEDED_TEXT } from '../../../lib/agent/approvals.js'
import { StoreUnavailableError } from '../../../lib/domain/errors.js'
import { aguiErrors } from '../../../lib/dialects/agui/errors.js'
import { createAguiStream } from '../../../lib/dialects/agui/format.js'
import { readAguiInput, readResume } from '../../../lib/dialects/agui/input.js'
import { createErrorHandler } from '../../../lib/http/errors.js'
import { createJsonBodyBudget, type JsonPath } from '../../../lib/input/body-budget.js'
import { RequestValidationError } from '../../../lib/input/validation.js'
import { MAX_AGUI_FIELD_DEPTH, AguiRunInput } from '../../../schemas/agui.js'
import { BODY_LIMIT_BYTES, MAX_IMAGE_BYTES, MAX_IMAGES, SseResponse, V2_BODY_LIMIT, V2_BYTES_PER_IMAGE } from '../../../schemas/chat.js'
import { MAX_TOTAL_TEXT_CHARS } from '../../../schemas/common.js'

/** Where a free-form field starts at its deepest: the top object, `tools`, a tool, then its `parameters`. */
const FIELD_LEVELS = 4
/** Nesting a body may reach while it arrives; anything deeper is refused unparsed. */
const MAX_BODY_DEPTH = FIELD_LEVELS + MAX_AGUI_FIELD_DEPTH

/** The 422 of a body nested too deeply, naming the field it happened in. */
function tooDeep (path: JsonPath): Error {
  const named = path[0] === 'messages' || path[0] === 'tools' ? path.slice(0, 3) : path.slice(0, 1)
  return new RequestValidationError([{ loc: ['body', ...named], msg: `Input should be at most ${MAX_AGUI_FIELD_DEPTH} levels deep`, type: 'too_deep' }])
}

/** The approval store failed: a 503 before the stream. */
function storeDown (error: unknown): never {
  throw new StoreUnavailableError('Approval', { cause: error })
}

const detail = Type.Ref('DetailError')

const aguiRoutes: FastifyPluginAsyncTypebox = async (app) => {
  // Every error before the stream opens is a plain HTTP error with a `{detail}` body (@ag-ui/client's `payload`).
  app.setErrorHandler(createErrorHandler(aguiErrors, app.config.DEBUG))
  const { config } = app
  const providerOf = (model: string): string => config.modelRoutes.find((route) => route.name === model)?.provider ?? config.provider

  app.post('/agui', {
    // Image data buys room as /api/v2/chat's images do; everything else gets the normal limit, cut as it arrives.
    bodyLimit: V2_BODY_LIMIT,
    preParsing: async (_request, _reply, payload) => payload.pipe(createJsonBodyBudget({
      roomPath: ['messages', '*', 'content', '*', 'source', 'value'],
      baseBytes: BODY_LIMIT_BYTES,
      bytesPerItem: V2_BYTES_PER_IMAGE,
      maxItems: MAX_IMAGES,
      maxDepth: MAX_BODY_DEPTH,
      tooDeep,
    })),
    schema: {
      tags: ['chat'],
      summary: 'Run the agent in the AG-UI protocol 1.0 (@ag-ui/client HttpAgent, CopilotKit-style UIs)',
      description: 'Takes an AG-UI `RunAgentInput` (`threadId`, `runId`, the whole conversation in `messages`, frontend `tools`, ' +
        '`context`, `forwardedProps.model`, `resume`) and answers with AG-UI events as SSE `data:` lines: `RUN_STARTED`; per model ' +
        'call its text as `TEXT_MESSAGE_START`/`CONTENT`/`END`; a server tool call as `TOOL_CALL_START`/`ARGS`/`END` before it runs ' +
        'and `TOOL_CALL_RESULT` after; calls that wait (frontend tools, tools that need approval) as `TOOL_CALL_START`/`ARGS`/`END`; ' +
        'last `RUN_FINISHED` (`outcome` success, with `pendingToolCallIds` for frontend calls, or `interrupt` with one interrupt per ' +
        'call that needs approval, answered by the next run\'s `resume`) with `usage`, or `RUN_ERROR` `{message, code}`. ' +
        'Failures before the stream opens are plain HTTP errors with `{detail}`.',
      operationId: 'postApiV1Agui',
      body: AguiRunInput,
      response: {
        200: SseResponse,
        401: detail,
        404: detail,
        409: detail,
        413: detail,
        415: detail,
        422: Type.Ref('ValidationError'),
        429: detail,
        503: detail,
      },
    },
  }, async (request, reply) => {
    const body = request.body
    const owner = request.identity
    const resume = readResume(body.resume)
    const scope = { family: 'agui' as const, scope: body.threadId }
    // The thread's waiting run, when approval is on: what the resume entries answer, or what a new run supersedes.
    const waiting = config.approvalPatterns.length === 0 || (resume.length === 0 && body.messages.every((m) => m.role !== 'assistant'))
      ? null
      : await app.stores.runs.waiting(owner, scope.family, scope.scope).catch(storeDown)
    const now = Date.now()
    const open = (waiting?.approvals ?? []).filter((approval) => approval.expiresAt > now)
    const pendingIds = new Set(open.map((approval) => approval.id))
    // A `cancelled` entry for an interrupt that no longer waits records nothing; a `resolved` one is answered (404, 409).
    const answers = resume.filter((entry) => entry.status === 'resolved' || pendingIds.has(entry.id))
    const format = createAguiStream({ threadId: body.threadId, runId: body.runId, parentRunId: body.parentRunId, providerOf })

    if (answers.length > 0) {
      const continuation = {
        ...scope,
        answers: answers.map(({ id, approved, reason }) => ({ id, approved, reason })),
        loc: ['body', 'resume'],
      }
      await app.agent.stream(request, reply, { continuation }, format)
      return reply
    }

    // A run over `messages`: calls without a result read why (superseded or expired interrupts of the thread).
    const waitingCalls = new Map((waiting?.approvals ?? []).map((approval) => [approval.callId, approval.expiresAt > now ? SUPERSEDED_TEXT : EXPIRED_TEXT]))
    const run = readAguiInput(body, {
      maxImages: MAX_IMAGES,
      maxImageBytes: MAX_IMAGE_BYTES,
      maxChars: MAX_TOTAL_TEXT_CHARS,
      isServerTool: (name) => app.tools.has(name),
      models: config.models,
      missingResult: (toolCallId) => resume.length > 0 ? EXPIRED_TEXT : waitingCalls.get(toolCallId),
    }, { needsUserMessage: true })
    const spec = {
      model: run.model,
      system: run.system,
      messages: run.turns,
      tools: 'all' as const,
      frontendTools: run.frontendTools,
      conversationId: body.threadId,
      approval: scope,
    }
    await app.agent.stream(request, reply, spec, format)
    return reply
  })
}

export default aguiRoutes
