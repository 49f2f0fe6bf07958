// Test helpers for MCP: a config file in a temp dir, the fixture server's launch settings, a free port.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { App } from '../../app.js'
import type { Teardown } from './teardown.js'

/** The small stdio MCP server of test/fixtures. */
export const FIXTURE_SERVER = fileURLToPath(new URL('../fixtures/mcp-server.mjs', import.meta.url))
/** The bin of the real @modelcontextprotocol/server-everything (stdio by default, `streamableHttp` as argument). */
export const EVERYTHING_SERVER = fileURLToPath(new URL('../../node_modules/@modelcontextprotocol/server-everything/dist/index.js', import.meta.url))

/** A stdio server entry running the fixture with `env`. */
export function fixtureServer (env: Record<string, string> = {}, extra: Record<string, unknown> = {}) {
  return { command: process.execPath, args: [FIXTURE_SERVER], env, ...extra }
}

/** A fresh temp dir, removed at teardown. */
export function tempDir (t: Teardown): string {
  const dir = mkdtempSync(join(tmpdir(), 'mcp-test-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  return dir
}

/** Writes `{mcpServers}` to a temp file; returns its path (for MCP_CONFIG_FILE). */
export function writeMcpConfig (t: Teardown, mcpServers: Record<string, unknown>): string {
  const path = join(tempDir(t), 'mcp.json')
  writeFileSync(path, JSON.stringify({ mcpServers }))
  return path
}

/** A port that was free a moment ago (for servers that take their port from the environment). */
export async function freePort (): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const address = server.address()
  await new Promise<void>((resolve) => server.close(() => { resolve() }))
  if (address === null || typeof address === 'string') throw new Error('no port')
  return address.port
}

/** Waits until each named MCP server of `app` is up (a loaded machine may need a retry); false if not within `ms`. */
export async function waitForMcp (app: { mcp: { statuses: () => Record<string, { state: string }> } }, servers: string[], ms = 120_000): Promise<boolean> {
  const until = Date.now() + ms
  for (;;) {
    const statuses = app.mcp.statuses()
    if (servers.every((server) => statuses[server]?.state === 'up')) return true
    if (Date.now() > until) return false
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

/** Whether a process id is alive. */
export function alive (pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

/** A tool call as /api/v1/chat reports it. */
export interface ToolCallJson { tool: string, args: unknown, result: string, is_error: boolean }

/**
 * Sends `text` (typically `/<tool> {json}` for the offline model) to /api/v1/chat with `tools` enabled
 * (default: the tool the text names).
 */
export async function command (app: App, text: string, tools?: string[]): Promise<{ status: number, body: { content: string, tool_calls: ToolCallJson[] | null } }> {
  const name = /^\/(\S+)/.exec(text)?.[1] ?? ''
  const res = await app.inject({
    method: 'POST',
    url: '/api/v1/chat',
    payload: { messages: [{ role: 'user', content: text }], tools: tools ?? [name] },
  })
  return { status: res.statusCode, body: res.json() }
}

/** The tool names GET /api/v1/tools lists. */
export async function toolNames (app: App): Promise<string[]> {
  const res = await app.inject({ method: 'GET', url: '/api/v1/tools' })
  return (res.json() as { tools: Array<{ name: string }> }).tools.map((tool) => tool.name)
}
