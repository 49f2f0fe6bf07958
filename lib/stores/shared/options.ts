// What the in-process stores share: an injectable clock and the checks of their options.

/** A clock returning epoch milliseconds; injectable so tests control time. */
export type Clock = () => number

export function assertPositive (name: string, value: number): void {
  if (!Number.isFinite(value) || value <= 0) throw new RangeError(`${name} must be a positive number, got ${value}`)
}

export function assertPositiveInteger (name: string, value: number): void {
  if (!Number.isSafeInteger(value) || value <= 0) throw new RangeError(`${name} must be a positive integer, got ${value}`)
}
