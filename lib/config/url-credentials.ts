// Credentials in URL settings (`user:pass@` in OTEL_EXPORTER_OTLP_*ENDPOINT, REDIS_URL, LLM_BASE_URL) never reach a log
// line (DECISIONS 7): what is logged is the URL without them.
import { stdSerializers } from 'pino'

// scheme://userinfo@ — userinfo runs to the first `@` before any `/`, `?`, `#`, whitespace, comma or quote.
const USERINFO = /\b([a-z][a-z0-9+.-]*:\/\/)[^/?#@\s,"'`]*@/gi

/** `text` with the `user:pass@` of every URL in it removed (`http://u:p@host/x` → `http://host/x`); comma lists too. */
export function redactUrlCredentials (text: string): string {
  return text.includes('@') ? text.replace(USERINFO, '$1') : text
}

/**
 * pino's error serializer, then no URL credentials anywhere in the result: fetch refuses a URL that carries them
 * with a message quoting the whole URL, and drivers may name the URL they were given.
 */
export function errWithoutUrlCredentials (error: Error): unknown {
  const serialized = stdSerializers.err(error)
  const text = JSON.stringify(serialized)
  return text.includes('@') ? JSON.parse(redactUrlCredentials(text)) as unknown : serialized
}
