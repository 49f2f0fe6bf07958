// KNOWLEDGE_BASE_FILE: a JSON object of `{key: content}` strings, the documents of search_knowledge_base.
import { ConfigError } from '../domain/errors.js'
import { readSettingsFile } from './settings-file.js'

/**
 * Reads a JSON object of `{key: content}` strings (KNOWLEDGE_BASE_FILE). Throws a ConfigError (one line naming
 * the file) when it cannot be read, is not valid JSON, or is not an object of strings.
 */
export function loadKnowledgeBaseFile (path: string): Record<string, string> {
  const parsed = readSettingsFile(path, {
    cannotRead: (error) => `Cannot read knowledge base file ${path}: ${error.message}`,
    notParsed: (_format, error) => `Knowledge base file ${path} is not valid JSON: ${error.message}`,
  })
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    const found = parsed === null ? 'null' : Array.isArray(parsed) ? 'an array' : `a ${typeof parsed}`
    throw new ConfigError(`Knowledge base file ${path} must hold a JSON object of {key: content} strings, found ${found}`)
  }
  for (const [key, value] of Object.entries(parsed)) {
    if (typeof value !== 'string') {
      throw new ConfigError(`Knowledge base file ${path}: the value of key ${JSON.stringify(key)} must be a string, found ${value === null ? 'null' : Array.isArray(value) ? 'an array' : typeof value}`)
    }
  }
  return parsed as Record<string, string>
}
