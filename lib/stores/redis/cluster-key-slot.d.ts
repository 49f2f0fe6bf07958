// Types of cluster-key-slot (ioredis' own slot function; the package ships none): the Redis Cluster hash slot of a key.
declare module 'cluster-key-slot' {
  /** The hash slot (0 to 16383) of `key`: CRC16 of its hash tag (the first non-empty `{...}`), else of the whole key. */
  function calculateSlot (key: string | Buffer): number
  namespace calculateSlot {
    /** The one slot of every key in `keys`, or -1 when they are not all in the same slot. */
    function generateMulti (keys: ReadonlyArray<string | Buffer>): number
  }
  export = calculateSlot
}
