// Bearer auth and caller identity (SPEC section 5, DECISIONS section 7).
// Every route not marked `config: { open: true }` needs `Authorization: Bearer <one of API_KEYS>` when
// keys are configured; empty API_KEYS turns auth off (one warning at startup). Keys are compared in
// constant time on their SHA-256 digests, so neither content nor length leaks, and are never logged.
import fp from 'fastify-plugin'
import { createHash, timingSafeEqual } from 'node:crypto'
import type { FastifyRequest } from 'fastify'
import { HttpError } from '../lib/domain/errors.js'

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
  }
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

const identityOfDigest = (digest: Buffer): string => `key:${digest.toString('hex').slice(0, IDENTITY_HASH_LENGTH)}`

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

export default fp(async (app) => {
  const { apiKeys } = app.config
  const authOn = apiKeys.length > 0
  const identityOfKey = createKeyMatcher(apiKeys)
  const identityOfBearer = (header: string | undefined): string | undefined => {
    const bearer = bearerToken(header)
    return bearer === undefined ? undefined : identityOfKey(bearer)
  }
  if (!authOn) app.log.warn('API_KEYS is empty: authentication is off, every route is open')

  const unauthorized = () => new HttpError(401, INVALID_API_KEY, { 'www-authenticate': 'Bearer' })

  app.decorateRequest('identity', '')

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
    const bearerIdentity = identityOfBearer(request.headers.authorization)
    if (bearerIdentity !== undefined) {
      request.identity = bearerIdentity
    } else {
      // DECISIONS 7: a protected route without a configured bearer key is refused; an X-API-Key alone does
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
