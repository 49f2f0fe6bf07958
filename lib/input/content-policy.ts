// The input rule of README "Endpoints": markup that could run script in a chat widget is refused (422).
import { RequestValidationError } from './validation.js'

/** True when `text` holds `<script ... >`, `javascript:` or `onerror=` in any case. Linear time. */
export function hasDisallowedContent (text: string): boolean {
  const lower = text.toLowerCase()
  if (lower.includes('javascript:') || lower.includes('onerror=')) return true
  const script = lower.indexOf('<script')
  return script !== -1 && lower.indexOf('>', script + 7) !== -1
}

/** Throws the 422 validation error when `text` is not allowed. */
export function assertAllowedContent (text: string, loc: Array<string | number>): void {
  if (hasDisallowedContent(text)) {
    throw new RequestValidationError([{ loc, msg: 'Value error, content is not allowed', type: 'value_error' }])
  }
}
