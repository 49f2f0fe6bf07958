// A model run over a stored conversation: load its memory, add the new message, save the new turns.
import type { FastifyInstance, FastifyRequest } from 'fastify'
import type { ChatTurn } from './llm/types.js'
import { identityOf, sessionStoreDown, type RunRequest } from './respond.js'

/**
 * Loads session `sessionId` of the caller and builds a run with the configured model settings over its
 * memory plus `message`. A failing store is a 503 (see {@link sessionStoreDown}).
 */
export async function runOverSession (
  app: FastifyInstance, request: FastifyRequest, sessionId: string, message: string, enabledTools: readonly string[]
) {
  const owner = identityOf(request)
  const record = await app.stores.sessions.get(owner, sessionId).catch(sessionStoreDown)
  const userTurn: ChatTurn = { role: 'user', content: message }
  const run: RunRequest = {
    model: app.config.defaultModel,
    messages: [...(record?.turns ?? []), userTurn],
    maxTokens: app.config.MAX_TOKENS,
    temperature: app.config.MODEL_TEMPERATURE,
    enabledTools,
  }
  /** Stores the new turns after the user's, then trims the session to MEMORY_MAX_TOKENS. */
  const remember = async (turns: ChatTurn[]) => {
    await app.stores.sessions.append(owner, sessionId, [userTurn, ...turns])
    await app.stores.sessions.trim(owner, sessionId, app.config.MEMORY_MAX_TOKENS)
  }
  return { run, remember }
}
