// Tools plugin: the agent's tool registry, its knowledge base from KNOWLEDGE_BASE_FILE or the built-in set.
import fp from 'fastify-plugin'
import { BUILT_IN_DOCUMENTS, createKnowledgeBase, loadKnowledgeBaseFile, type KnowledgeBase } from '../lib/tools/knowledge-base.js'
import { createToolRegistry, type ToolRegistry } from '../lib/tools/registry.js'

declare module 'fastify' {
  interface FastifyInstance {
    tools: ToolRegistry
    knowledgeBase: KnowledgeBase
  }
}

export default fp(async (app) => {
  const file = app.config.KNOWLEDGE_BASE_FILE
  const knowledgeBase = createKnowledgeBase(file ? loadKnowledgeBaseFile(file) : BUILT_IN_DOCUMENTS)
  app.decorate('knowledgeBase', knowledgeBase)
  app.decorate('tools', createToolRegistry(knowledgeBase))
}, { name: 'tools', dependencies: ['config'], fastify: '5.x' })
