// What a request mapping refuses, without HTTP: the `loc` of each issue of the 422 it throws.
import { RequestValidationError } from '../../lib/input/validation.js'

/** The `loc`s of the 422 (RequestValidationError) that `run` throws; anything else thrown, or nothing, fails. */
export function refusedAt (run: () => unknown): unknown[] {
  try {
    run()
  } catch (error) {
    if (error instanceof RequestValidationError) return error.issues.map((issue) => issue.loc)
    throw error
  }
  throw new Error('not refused')
}
