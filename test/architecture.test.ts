// The layers of the code map (docs/architecture.md): schemas < lib (its folders in their own order) < lib/http < plugins < routes.
// No module imports a higher layer, no module inside lib sits outside a named folder, no import cycle inside lib,
// only the route scopes import route modules (to register them), and no route imports a plugin module. A dialect is
// named by its folder, and the tests mirror the tree.
import { readFileSync, readdirSync, statSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { test } from 'tap'
import { DIALECTS } from '../lib/dialects/names.js'

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..')

/**
 * Lowest first. Folders on one line are peers: neither may import the other. lib's order: the domain's own types and
 * errors; input checks; tools; the model providers; stores; settings (they read the provider table and Redis URLs);
 * the agent runner; the wire dialects; what plugs into runs as hooks (budgets, traces, metrics); the HTTP helpers.
 */
const LAYERS: ReadonlyArray<readonly string[]> = [
  ['schemas'],
  ['lib/domain'],
  ['lib/input'],
  ['lib/tools'],
  ['lib/llm'],
  ['lib/stores'],
  ['lib/config'],
  ['lib/agent'],
  ['lib/dialects'],
  ['lib/budgets', 'lib/telemetry', 'lib/metrics'],
  ['lib/http'],
  ['plugins'],
  ['routes'],
]
const LAYOUT_SCOPES = new Set(['routes/unversioned.ts', 'routes/api/versioned.ts', 'routes/v1/scope.ts'])

/** The layer folder a file belongs to, or undefined when it is in none. */
function folderOf (file: string): string | undefined {
  return LAYERS.flat().filter((folder) => file.startsWith(folder + '/')).sort((a, b) => b.length - a.length)[0]
}

function rankOf (folder: string): number {
  return LAYERS.findIndex((layer) => layer.includes(folder))
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

const files = ['schemas', 'lib', 'plugins', 'routes'].flatMap(sources)

test('every module of lib sits in a named folder', async (t) => {
  t.ok(files.length > 60, 'the tree was read')
  t.same(files.filter((file) => folderOf(file) === undefined), [], 'modules outside the layers')
})

test('no module imports a higher layer or a peer; no route imports a route', async (t) => {
  const upward: string[] = []
  const routeToRoute: string[] = []
  for (const file of files) {
    const from = folderOf(file)
    if (from === undefined) continue
    for (const target of importsOf(file)) {
      const to = folderOf(target)
      if (to === undefined || to === from) continue
      if (rankOf(to) >= rankOf(from)) upward.push(`${file} -> ${target}`)
      if (file.startsWith('routes/') && target.startsWith('routes/') && !LAYOUT_SCOPES.has(file)) routeToRoute.push(`${file} -> ${target}`)
    }
  }
  t.same(upward, [], 'imports that run up a layer or across to a peer')
  t.same(routeToRoute, [], 'routes importing routes')
})

test('no route imports a plugin module: plugins decorate the app, routes use the decorations and lib', async (t) => {
  const routeToPlugin = files.filter((file) => file.startsWith('routes/'))
    .flatMap((file) => importsOf(file).filter((target) => target.startsWith('plugins/')).map((target) => `${file} -> ${target}`))
  t.same(routeToPlugin, [], 'routes importing plugins')
})

test('no import cycle inside lib', async (t) => {
  const graph = new Map(files.filter((file) => file.startsWith('lib/')).map((file) => [file, importsOf(file).filter((target) => target.startsWith('lib/'))]))
  const cycles: string[] = []
  const done = new Set<string>()
  const path: string[] = []
  const visit = (file: string): void => {
    const at = path.indexOf(file)
    if (at !== -1) { cycles.push([...path.slice(at), file].join(' -> ')); return }
    if (done.has(file)) return
    path.push(file)
    for (const target of graph.get(file) ?? []) visit(target)
    path.pop()
    done.add(file)
  }
  for (const file of graph.keys()) visit(file)
  t.same(cycles, [], 'import cycles')
})

/** Store folders: lib/stores/<store>/ but its shared plumbing (shared/, redis/), and the budgets' store. */
const STORE_PLUMBING = new Set(['lib/stores/shared', 'lib/stores/redis'])
const storeFolders = [
  ...new Set(files.map((file) => /^lib\/stores\/[^/]+(?=\/)/.exec(file)?.[0]).filter((dir): dir is string => dir !== undefined && !STORE_PLUMBING.has(dir))),
  'lib/budgets/store',
]

test('every store is a folder with its interface and both backends: types.ts, memory.ts, redis.ts', async (t) => {
  t.ok(storeFolders.length >= 10, 'the store folders were read')
  const missing = storeFolders.flatMap((dir) => ['types.ts', 'memory.ts', 'redis.ts'].filter((name) => !files.includes(`${dir}/${name}`)).map((name) => `${dir}/${name}`))
  t.same(missing, [], 'store files missing')
  t.same(files.filter((file) => /^lib\/stores\/[^/]+\.ts$/.test(file)), [], 'modules loose in lib/stores (each belongs to a store or the plumbing)')
})

test('only plugins/stores.ts opens Redis connections (lib/stores/ has the factories it calls)', async (t) => {
  const opening = files.filter((file) => !file.startsWith('lib/stores/') && file !== 'plugins/stores.ts')
    .filter((file) => /\bcreateRedis(Client|ClusterClient|NodeClient)\s*\(|\bnew\s+(Redis|Cluster)\s*\(/.test(readFileSync(join(root, file), 'utf8')))
  t.same(opening, [], 'modules that open a Redis connection')
})

/** Folders directly under `dir`. */
function foldersIn (dir: string): string[] {
  return readdirSync(join(root, dir)).filter((name) => statSync(join(root, dir, name)).isDirectory()).sort()
}

test('a dialect is named by its folder: the list of names, and every stream format\'s name', async (t) => {
  const folders = foldersIn('lib/dialects')
  t.same([...DIALECTS].sort(), folders, 'lib/dialects/names.ts lists the folders')
  const misnamed: string[] = []
  const withFormat = new Set<string>()
  for (const file of files.filter((path) => path.split('/').length > 3 && path.startsWith('lib/dialects/'))) {
    const folder = file.split('/')[2] as string
    const text = readFileSync(join(root, file), 'utf8')
    // A stream format's literal names its dialect on the line right before its `logName` (the stream log's value).
    const names = [...text.matchAll(/^\s*name: '([^']*)',\n\s*logName: /gm)].map((match) => match[1] as string)
    if (names.length !== (text.match(/^\s*logName: /gm) ?? []).length) misnamed.push(`${file}: a logName without \`name\` on the line before`)
    for (const name of names) {
      if (name !== folder) misnamed.push(`${file}: ${name}`)
      withFormat.add(folder)
    }
  }
  t.same(misnamed, [], 'stream formats named otherwise than their folder')
  t.same([...withFormat].sort(), folders, 'every dialect has a stream format')
})

/** Tests of the whole service (its bundle, deployment, docs, route schemas, the playground in a browser) and of this map. */
const WHOLE_SERVICE_TESTS = [
  'architecture', 'bundle', 'bundle-concurrent', 'deploy', 'deploy-replicas', 'docs-examples', 'playground', 'playground-approval',
  'playground-session', 'route-schemas',
].map((name) => `${name}.test.ts`).sort()

test('tests mirror the tree: only whole-service tests sit at the top of test/', async (t) => {
  const top = readdirSync(join(root, 'test')).filter((name) => name.endsWith('.test.ts')).sort()
  t.same(top, WHOLE_SERVICE_TESTS, 'a test of one module or plugin goes in the folder that mirrors it (test/config, test/http, test/plugins, ...)')
})
