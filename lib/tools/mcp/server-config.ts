// How to reach one MCP server: a child process over stdio, or a remote over Streamable HTTP (read from MCP_CONFIG_FILE).

/** A server run as a child process, spoken to over stdio. */
export interface StdioServerConfig {
  kind: 'stdio'
  command: string
  args: string[]
  /** The child's whole environment besides PATH and HOME. */
  env: Record<string, string>
  cwd?: string
}

/** A remote server spoken to over Streamable HTTP. */
export interface HttpServerConfig {
  kind: 'http'
  url: URL
  headers: Record<string, string>
}

export type McpServerConfig = StdioServerConfig | HttpServerConfig
