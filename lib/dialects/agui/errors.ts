// Error bodies of POST /api/v1/agui before its stream opens (README "AG-UI"): `{detail}` for every status, never a stream.
import { detailAnswer, modelFailureAnswer, type ErrorRenderer } from '../errors.js'

/** AG-UI's plain HTTP errors: the JSON body `@ag-ui/client` hands to the caller as the error's `payload`. */
export const aguiErrors: ErrorRenderer = {
  render (error) {
    switch (error.kind) {
      case 'model': return modelFailureAnswer(error, 502)
      case 'agent': return { status: 500, body: { detail: error.message } }
      case 'internal': return { status: 500, body: { detail: 'Internal server error' } }
      default: return detailAnswer(error)
    }
  },
}
