// Node 24's own TypeScript support for the test run (`.ci/run`): the sources import `./x.js` (what `tsc` emits), so a
// specifier that finds no `.js` file is tried as `.ts`. A synchronous in-thread hook: no loader worker, no transpiler.
import { registerHooks } from 'node:module'

registerHooks({
  resolve (specifier, context, nextResolve) {
    try {
      return nextResolve(specifier, context)
    } catch (error) {
      const relative = specifier.startsWith('.') || specifier.startsWith('/') || specifier.startsWith('file:')
      if (error?.code !== 'ERR_MODULE_NOT_FOUND' || !relative || !specifier.endsWith('.js')) throw error
      return nextResolve(`${specifier.slice(0, -3)}.ts`, context)
    }
  },
})
