// Bearer auth and caller identity (README "Limits").
// Every route not marked `config: { open: true }` needs `Authorization: Bearer <one of API_KEYS>` when
// keys are configured; empty API_KEYS turns auth off (one warning at startup). Keys are compared in
// constant time on their SHA-256 digests, so neither content nor length leaks, and are never logged.
import fp from 'fastify-plugin'
import { createHash, timingSafeEqual } from 'node:crypto'
import type { FastifyRequest } from 'fastify'
import { HttpError } from '../lib/domain/errors.js'
import { defaultLabel, sha256Digest, type ApiKeyEntry } from '../lib/config/keys-file.js'

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Open route: no auth, no rate limit (health, readiness, metrics, docs). */
    open?: boolean
  }
  interface FastifyRequest {
    /**
     * Who is calling, for rate limits and session ownership; never a raw key:
     * `key:<sha256 prefix>` of the configured bearer key on a protected route, else `ip:<client ip>`
     * (open routes read no key: nothing there is rate limited).
     */
    identity: string
    /** The label of the caller's key (API_KEYS_FILE, else `key-<sha256 prefix>`); undefined without one. */
    keyLabel: string | undefined
  }
  interface FastifyInstance {
    /** The configured bearer keys: API_KEYS_FILE entries, then API_KEYS' own (by identity). */
    apiKeys: ApiKeyTable
  }
}

/** Every accepted key by the identity it gives its caller (never the key itself). */
export interface ApiKeyTable {
  readonly entries: readonly ApiKeyEntry[]
  byIdentity (identity: string): ApiKeyEntry | undefined
}

export const INVALID_API_KEY = 'Invalid API Key'

/** Hex characters of the key's SHA-256 kept in an identity (64 bits: no collisions among configured keys). */
const IDENTITY_HASH_LENGTH = 16

const BEARER = /^Bearer +(\S+) *$/i

const sha256 = (value: string): Buffer => createHash('sha256').update(value, 'utf8').digest()

/** The identity of a caller holding `key`: a digest prefix, so the key itself never leaves this file. */
export function keyIdentity (key: string): string {
  return identityOfDigest(sha256(key))
}

export const identityOfDigest = (digest: Buffer): string => `key:${digest.toString('hex').slice(0, IDENTITY_HASH_LENGTH)}`

/** The token of an `Authorization: Bearer <token>` header (scheme case-insensitive), else undefined. */
export function bearerToken (header: string | undefined): string | undefined {
  if (header === undefined) return undefined
  return BEARER.exec(header)?.[1]
}

/** Whether a request reached a route marked open; unmatched requests (404) are answered as such. */
export function isOpenRoute (request: FastifyRequest): boolean {
  return request.is404 || request.routeOptions.config.open === true
}

/**
 * A constant-time membership test over the configured keys' digests: the caller's identity when the
 * candidate is a configured key, else undefined (one hash per request, shared by both answers).
 */
export function createKeyMatcher (keys: readonly string[]) {
  const digests = keys.map(sha256)
  return (candidate: string): string | undefined => {
    const digest = sha256(candidate)
    let found = false
    // No early exit: every configured key is compared, whichever matches.
    for (const known of digests) found = timingSafeEqual(digest, known) || found
    return found ? identityOfDigest(digest) : undefined
  }
}

/**
 * The keys of API_KEYS_FILE and API_KEYS as one list: a key in both keeps its file entry; a key only in
 * API_KEYS gets the default budgets and the label `key-<first 8 hex digits of its SHA-256>`.
 */
export function keyTable (fileEntries: readonly ApiKeyEntry[], apiKeys: readonly string[]): ApiKeyTable {
  const entries = [...fileEntries]
  const known = new Set(entries.map((entry) => entry.digest.toString('hex')))
  for (const key of apiKeys) {
    const digest = sha256Digest(key)
    if (known.has(digest.toString('hex'))) continue
    known.add(digest.toString('hex'))
    entries.push({ label: defaultLabel(digest), digest, budgets: {} })
  }
  const byIdentity = new Map(entries.map((entry) => [identityOfDigest(entry.digest), entry]))
  return { entries, byIdentity: (identity) => byIdentity.get(identity) }
}

/** Constant-time lookup of a candidate key among the table's digests: its entry, else undefined. */
function createEntryMatcher (table: ApiKeyTable) {
  const digests = table.entries.map((entry) => entry.digest)
  return (candidate: string): ApiKeyEntry | undefined => {
    const digest = sha256(candidate)
    let found = -1
    // No early exit: every configured key is compared, whichever matches.
    for (const [index, known] of digests.entries()) if (timingSafeEqual(digest, known)) found = index
    return found === -1 ? undefined : table.entries[found]
  }
}

export default fp(async (app) => {
  const table = keyTable(app.config.apiKeyEntries, app.config.apiKeys)
  app.decorate('apiKeys', table)
  const authOn = table.entries.length > 0
  const entryOfKey = createEntryMatcher(table)
  const entryOfBearer = (header: string | undefined): ApiKeyEntry | undefined => {
    const bearer = bearerToken(header)
    return bearer === undefined ? undefined : entryOfKey(bearer)
  }
  if (!authOn) app.log.warn('API_KEYS and API_KEYS_FILE list no key: authentication is off, every route is open')

  const unauthorized = () => new HttpError(401, INVALID_API_KEY, { 'www-authenticate': 'Bearer' })

  app.decorateRequest('identity', '')
  app.decorateRequest('keyLabel', undefined)

  // Requests that failed authentication: answered 401 in preParsing, after the rate limit's onRequest
  // hook has counted them against the client IP's window (key guessing is throttled like any traffic).
  const refused = new WeakSet<FastifyRequest>()

  // A callback hook: no promise and no extra microtask per request.
  app.addHook('onRequest', (request, _reply, done) => {
    // Open routes and 404s check no key and have no rate limit, so nothing reads a key identity there:
    // the client IP names the caller, and /health or /metrics cost no hashing.
    if (!authOn || isOpenRoute(request)) {
      request.identity = `ip:${request.ip}`
      done()
      return
    }
    const entry = entryOfBearer(request.headers.authorization)
    if (entry !== undefined) {
      request.identity = identityOfDigest(entry.digest)
      request.keyLabel = entry.label
    } else {
      // README "Limits": a protected route without a configured bearer key is refused; an X-API-Key alone does
      // not authenticate (nor, being refused, name a rate-limit identity).
      request.identity = `ip:${request.ip}`
      refused.add(request)
    }
    done()
  })
  if (authOn) {
    app.addHook('preParsing', async (request, _reply, payload) => {
      if (refused.has(request)) throw unauthorized()
      return payload
    })
  }

  // The OpenAPI document shows which operations need the bearer key (the scheme is in plugins/docs.ts).
  if (authOn) {
    app.addHook('onRoute', (route) => {
      if (route.config?.open === true || route.schema?.hide === true) return
      const schema = route.schema ?? {}
      const response = schema.response as Record<string, unknown> | undefined
      route.schema = {
        ...schema,
        security: [{ bearerAuth: [] }],
        ...(response === undefined ? {} : { response: { 401: { $ref: 'DetailError' }, ...response } }),
      }
    })
  }
}, { name: 'auth', dependencies: ['config'], fastify: '5.x' })
