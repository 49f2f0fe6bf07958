// What the hand-written async iterators of the hot paths (model streams, stream-log readers) answer once finished.

/** A finished iterator's result, shared: none is allocated per end. */
export const ITERATION_DONE: IteratorReturnResult<undefined> = Object.freeze({ value: undefined, done: true })
