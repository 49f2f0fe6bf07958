// Response schema of GET /api/v1/tools (README "MCP tools").
import { Type, type Static } from 'typebox'

export const ToolInfo = Type.Object({
  name: Type.String({ description: 'The name a request\'s `tools` and the model use; MCP tools are `<server>__<tool>`' }),
  description: Type.String({ description: 'What the model is told the tool does' }),
  input_schema: Type.Object({}, { additionalProperties: true, description: 'JSON schema of the tool\'s input object' }),
  source: Type.String({ description: '`builtin`, or `mcp:<server>` for a tool of an MCP server of MCP_CONFIG_FILE' }),
  needs_approval: Type.Boolean({ description: 'Whether a call of this tool waits for a person\'s approval (TOOL_APPROVAL_REQUIRED)' }),
})

export const ToolList = Type.Object({
  tools: Type.Array(ToolInfo, { description: 'Every tool available right now (MCP tools come and go with their servers)' }),
})

export type ToolListBody = Static<typeof ToolList>
