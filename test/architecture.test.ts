// The layers of the code map (README): schemas < lib < lib/http < plugins < routes; no module imports a higher
// layer, and only the route scopes (the two layouts, /v1) import route modules (to register them).
import { readFileSync, readdirSync, statSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { test } from 'tap'

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..')
const LAYERS = ['schemas', 'lib', 'lib/http', 'plugins', 'routes'] as const
const LAYOUT_SCOPES = new Set(['routes/unversioned.ts', 'routes/api/versioned.ts', 'routes/v1/index.ts'])

function layerOf (file: string): number {
  if (file.startsWith('lib/http/')) return LAYERS.indexOf('lib/http')
  const top = file.split('/')[0] as string
  return LAYERS.indexOf(top as typeof LAYERS[number])
}

function sources (dir: string): string[] {
  return readdirSync(join(root, dir)).flatMap((name) => {
    const path = join(dir, name)
    if (statSync(join(root, path)).isDirectory()) return sources(path)
    return path.endsWith('.ts') ? [path] : []
  })
}

/** Relative imports of a module, as paths from the repository root (`.js` specifiers name `.ts` files). */
function importsOf (file: string): string[] {
  const text = readFileSync(join(root, file), 'utf8')
  const specifiers = [...text.matchAll(/^(?:import|export)[^'"]*from '(\.{1,2}\/[^']+)'/gm)].map((match) => match[1] as string)
  return specifiers.map((specifier) => relative(root, resolve(join(root, dirname(file)), specifier)).replace(/\.js$/, '.ts'))
}

test('no module imports a higher layer; no route imports a route', async (t) => {
  const files = ['schemas', 'lib', 'plugins', 'routes'].flatMap(sources)
  t.ok(files.length > 40, 'the tree was read')
  const upward: string[] = []
  const routeToRoute: string[] = []
  for (const file of files) {
    for (const target of importsOf(file)) {
      const targetLayer = layerOf(target)
      if (targetLayer === -1) continue
      if (targetLayer > layerOf(file)) upward.push(`${file} -> ${target}`)
      if (file.startsWith('routes/') && target.startsWith('routes/') && !LAYOUT_SCOPES.has(file)) routeToRoute.push(`${file} -> ${target}`)
    }
  }
  t.same(upward, [], 'imports that run up a layer')
  t.same(routeToRoute, [], 'routes importing routes')
})
