// Reads a settings file a variable names (MODELS_FILE, MCP_CONFIG_FILE, KNOWLEDGE_BASE_FILE): every failure is one ConfigError line.
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { extname } from 'node:path'
import { ConfigError } from '../domain/errors.js'

/** How one file's failures are worded (each setting keeps the words README documents). */
export interface SettingsFileErrors {
  cannotRead: (error: NodeJS.ErrnoException) => string
  notParsed: (format: 'JSON' | 'YAML', error: Error) => string
}

/** True for a `.yaml` / `.yml` path. */
export function isYamlPath (path: string): boolean {
  return ['.yaml', '.yml'].includes(extname(path).toLowerCase())
}

/**
 * The parsed content of `path`: JSON, or YAML when `yaml` and the path ends in `.yaml` / `.yml`. A file that
 * cannot be read or parsed throws a ConfigError worded by `errors` (the cause kept).
 */
export function readSettingsFile (path: string, errors: SettingsFileErrors, options: { yaml?: boolean } = {}): unknown {
  let text: string
  try {
    text = readFileSync(path, 'utf8')
  } catch (error) {
    throw new ConfigError(errors.cannotRead(error as NodeJS.ErrnoException), { cause: error })
  }
  const yaml = options.yaml === true && isYamlPath(path)
  try {
    // The YAML parser is loaded only for a YAML file: most services never pay for it at startup.
    return yaml ? (createRequire(import.meta.url)('yaml') as typeof import('yaml')).parse(text) : JSON.parse(text)
  } catch (error) {
    throw new ConfigError(errors.notParsed(yaml ? 'YAML' : 'JSON', error as Error), { cause: error })
  }
}
