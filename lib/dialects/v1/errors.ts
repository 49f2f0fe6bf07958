// Error bodies of the versioned layout (/api/v1, /api/v2): `{detail}`, a failed model call 502, agent errors `{error, message}`.
import { detailAnswer, modelFailureAnswer, type ErrorRenderer } from '../errors.js'

export const versionedErrors: ErrorRenderer = {
  render (error) {
    switch (error.kind) {
      case 'model': return modelFailureAnswer(error, 502)
      case 'agent': return { status: 500, body: { error: error.name, message: error.message } }
      case 'internal': return { status: 500, body: { error: 'Internal server error', detail: 'An unexpected error occurred' } }
      default: return detailAnswer(error)
    }
  },
}
