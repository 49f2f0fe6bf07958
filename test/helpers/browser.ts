// Test helper: Debian's Chromium driven by playwright-core (no browser download); skips locally, fails under CI, when none is found.
import { existsSync, mkdirSync } from 'node:fs'
import { chromium, type Browser, type Page } from 'playwright-core'
import type { Test } from 'tap'

/** Where the browser is looked for: CHROMIUM_PATH, else Debian's package. */
export const CHROMIUM_PATHS = [process.env.CHROMIUM_PATH, '/usr/bin/chromium', '/usr/bin/chromium-browser'].filter((p): p is string => p !== undefined && p !== '')

/** Screenshots of the browser tests (gitignored test artefacts). */
export const SCREENSHOT_DIR = new URL('../../test-results/playground/', import.meta.url)

/**
 * Launches headless Chromium, closed at teardown. Returns null (the test should return) when no browser is
 * installed: skipped with a visible message, except under `CI=true`, where that is a failure.
 */
export async function launchBrowser (t: Test): Promise<Browser | null> {
  const executablePath = CHROMIUM_PATHS.find((path) => existsSync(path))
  if (executablePath === undefined) {
    const message = `no Chromium found (${CHROMIUM_PATHS.join(', ')}): apt-get install chromium, or set CHROMIUM_PATH`
    if (process.env.CI === 'true') {
      t.fail(`${message}, and CI=true requires it`)
    } else {
      t.comment(`${message}, skipping the browser tests`)
      t.pass('needs a browser', { skip: `${message}, skipping` })
    }
    return null
  }
  // --no-sandbox: containers and CI run as root, where Chromium's sandbox cannot start.
  const browser = await chromium.launch({ executablePath, headless: true, args: ['--no-sandbox', '--disable-dev-shm-usage'] })
  t.teardown(() => browser.close())
  mkdirSync(SCREENSHOT_DIR, { recursive: true })
  return browser
}

/** The file URL path of a screenshot named `name`. */
export function screenshotPath (name: string): string {
  return new URL(`${name}.png`, SCREENSHOT_DIR).pathname
}

/**
 * Collects page errors, console errors (CSP violations show up there) and failed responses. A 404 of
 * /api/v1/models is expected while the service has no model list: the page falls back to the health endpoint.
 */
export function watchErrors (page: Page): string[] {
  const errors: string[] = []
  page.on('pageerror', (error) => errors.push(`pageerror: ${error.message}`))
  page.on('response', (response) => {
    const url = new URL(response.url())
    if (response.status() >= 400 && !(response.status() === 404 && url.pathname === '/api/v1/models')) {
      errors.push(`response: ${response.status()} ${url.pathname}`)
    }
  })
  page.on('console', (message) => {
    if (message.type() === 'error' && !message.text().startsWith('Failed to load resource')) errors.push(`console: ${message.text()}`)
  })
  return errors
}
