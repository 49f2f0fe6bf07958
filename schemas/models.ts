// Schema of the GET /api/v1/models answer (README, "Models and providers").
import { Type } from 'typebox'

export const ModelListEntry = Type.Object({
  id: Type.String({ description: 'Model name to send as `model`' }),
  object: Type.Literal('model'),
  owned_by: Type.String({ description: 'Provider kind: anthropic, openai or offline' }),
  default: Type.Boolean({ description: 'Used when a request names no model' }),
})

export const ModelList = Type.Object({
  object: Type.Literal('list'),
  data: Type.Array(ModelListEntry),
}, { description: 'The models clients may name, default first' })
