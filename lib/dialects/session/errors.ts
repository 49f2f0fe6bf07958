// Error bodies of the unversioned layout (/chat, /sessions, ...): as the versioned one, but a failed model call is a 500 and an
// unexpected error `{error: "InternalServerError", detail}` (the stack trace with DEBUG).
import { detailAnswer, modelFailureAnswer, type ErrorRenderer } from '../errors.js'

export const unversionedErrors: ErrorRenderer = {
  render (error, { debug }) {
    switch (error.kind) {
      case 'model': return modelFailureAnswer(error, 500)
      case 'agent': return { status: 500, body: { error: error.name, message: error.message } }
      case 'internal':
        return { status: 500, body: { error: 'InternalServerError', detail: debug ? (error.error.stack ?? String(error.error)) : 'Internal server error' } }
      default: return detailAnswer(error)
    }
  },
}
