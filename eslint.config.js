// Lint: neostandard with its TypeScript rules.
import neostandard from 'neostandard'

export default neostandard({
  ts: true,
  ignores: ['node_modules/**', 'dist/**', 'coverage/**', '.tap/**', 'bench/results/**'],
})
