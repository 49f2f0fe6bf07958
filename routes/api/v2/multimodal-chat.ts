// POST /api/v2/chat: MultimodalRequest, images attached to the last user message; answers like /api/v1/chat.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { refuseGatedTools } from '../../../lib/dialects/approvals.js'
import { agentResponse, chatRunSpec } from '../../../lib/dialects/v1/request.js'
import { parseImage } from '../../../lib/input/images.js'
import type { ImageBlock } from '../../../lib/domain/types.js'
import { textChunks } from '../../../lib/dialects/v1/text-chunks.js'
import { resumableIn } from '../../../lib/http/resumable.js'
import { RequestValidationError, type ValidationIssue } from '../../../lib/input/validation.js'
import {
  AgentResponse, BODY_LIMIT_BYTES, MAX_IMAGE_BYTES, MAX_IMAGES, SseResponse, V2_BODY_LIMIT, V2_BYTES_PER_IMAGE, multimodalRequestSchema,
} from '../../../schemas/chat.js'
import { modelErrorResponses } from '../../../schemas/common.js'
import { createJsonBodyBudget } from '../../../lib/input/body-budget.js'

const v2ChatRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.post('/chat', {
    bodyLimit: V2_BODY_LIMIT,
    // Text alone gets the normal limit; only images buy more, and a body over its budget is cut as it arrives.
    preParsing: async (_request, _reply, payload) => payload.pipe(createJsonBodyBudget({
      roomPath: ['images', '*'], baseBytes: BODY_LIMIT_BYTES, bytesPerItem: V2_BYTES_PER_IMAGE, maxItems: MAX_IMAGES,
    })),
    schema: {
      tags: ['chat'],
      summary: 'Chat with images (base64 or data: URLs)',
      description: `Images (png, jpeg, gif, webp; at most ${MAX_IMAGES}, 5 MB each) attach to the last user message. Answers like /api/v1/chat.`,
      operationId: 'postApiV2Chat',
      body: multimodalRequestSchema(app.config.models),
      response: { 200: { ...SseResponse, content: { 'application/json': { schema: AgentResponse }, ...SseResponse.content } }, ...modelErrorResponses },
    },
  }, async (request, reply) => {
    const body = request.body
    const images: ImageBlock[] = []
    const issues: ValidationIssue[] = []
    for (const [index, image] of (body.images ?? []).entries()) {
      const parsed = parseImage(image, index, MAX_IMAGE_BYTES)
      if (parsed.ok) images.push(parsed.block)
      else issues.push(parsed.issue)
    }
    if (issues.length > 0) throw new RequestValidationError(issues)
    refuseGatedTools(body.tools, app.agent.needsApproval)
    const spec = chatRunSpec(body, [], images)
    if (body.stream === true) {
      await app.agent.stream(request, reply, spec, textChunks, resumableIn(body, 'versioned'))
      return reply
    }
    return agentResponse(await app.agent.json(request, reply, spec, 'v1'))
  })
}

export default v2ChatRoutes
