// What a helper needs of a tap test to clean up after itself (a Test, or anything with `teardown`).

export interface Teardown { teardown: (fn: () => unknown) => void }
