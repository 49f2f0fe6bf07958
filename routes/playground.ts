// GET /playground (README "Chat UIs"): the chat page and its assets, served by the service itself, open like /docs.
import { existsSync, readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { FastifyPluginAsync } from 'fastify'

/** The page's policy: scripts, styles, images and requests from this origin only; no frames, no plugins. */
export const PLAYGROUND_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self'",
  "connect-src 'self'",
  "font-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ')

const ASSETS: Record<string, string> = {
  'index.html': 'text/html; charset=utf-8',
  'app.js': 'text/javascript; charset=utf-8',
  'style.css': 'text/css; charset=utf-8',
  'favicon.svg': 'image/svg+xml',
}

/** `public/playground` beside the sources, or beside `dist/` when running the build. */
function assetDir (): string {
  let dir = dirname(fileURLToPath(import.meta.url))
  for (let up = 0; up < 4; up++) {
    const candidate = join(dir, 'public', 'playground')
    if (existsSync(join(candidate, 'index.html'))) return candidate
    dir = dirname(dir)
  }
  throw new Error('playground assets not found (public/playground); set PLAYGROUND=false to run without them')
}

const playgroundRoutes: FastifyPluginAsync = async (app) => {
  const dir = assetDir()
  // Read once at startup: four small files, answered from memory.
  const files = new Map(Object.entries(ASSETS).map(([name, type]) => [name, { type, body: readFileSync(join(dir, name)) }]))
  const headers = {
    'content-security-policy': PLAYGROUND_CSP,
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'no-referrer',
    'cache-control': 'no-cache',
  }
  for (const [name, file] of files) {
    const url = name === 'index.html' ? '/playground' : `/playground/${name}`
    app.get(url, { config: { open: true }, schema: { hide: true } }, async (_request, reply) => {
      return reply.headers(headers).type(file.type).send(file.body)
    })
  }
  app.get('/playground/', { config: { open: true }, schema: { hide: true } }, async (_request, reply) => reply.redirect('/playground', 301))
}

export default playgroundRoutes
