// POST /api/v2/chat: MultimodalRequest, images attached to the last user message; answers like /api/v1/chat.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { agentResponse, chatRunSpec } from '../../../lib/agent/conversation.js'
import { parseImage } from '../../../lib/images.js'
import type { ImageBlock } from '../../../lib/llm/types.js'
import { textChunks } from '../../../lib/stream-formats.js'
import { RequestValidationError, type ValidationIssue } from '../../../lib/validation.js'
import { AgentResponse, MAX_IMAGE_BYTES, MAX_IMAGE_CHARS, MAX_IMAGES, SseResponse, multimodalRequestSchema } from '../../../schemas/chat.js'
import { modelErrorResponses } from '../../../schemas/common.js'

/** Room for every image at its largest plus the messages. */
export const V2_BODY_LIMIT = MAX_IMAGES * MAX_IMAGE_CHARS + 2 * 1024 * 1024

const v2ChatRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.post('/chat', {
    bodyLimit: V2_BODY_LIMIT,
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
    const spec = chatRunSpec(body, [], images)
    if (body.stream === true) {
      await app.agent.stream(request, reply, spec, textChunks)
      return reply
    }
    return agentResponse(await app.agent.json(request, reply, spec))
  })
}

export default v2ChatRoutes
