// GET /playground: assets and policy (inject), then the page in Debian's Chromium at desktop and phone sizes.
import { test } from 'tap'
import type { Page } from 'playwright-core'
import { buildTestApp } from './helpers/app.js'
import { ROOMY_LIMITS } from './helpers/agent.js'
import { buildFakeApp, listen } from './helpers/fake-app.js'
import { launchBrowser, screenshotPath } from './helpers/browser.js'
import { PLAYGROUND_CSP } from '../routes/playground.js'

/** The reconnect route needs the resumable streams (not on main yet): these run, and say so, until it lands. */
const RECONNECT_TODO = { todo: 'GET /api/v1/ui/chat/{id}/stream needs the resumable streams, not merged yet' }

const VIEWPORTS = [
  { name: 'desktop', width: 1280, height: 800 },
  { name: 'phone', width: 390, height: 844 },
] as const

test('the page and its assets: open, own-origin CSP, right types; PLAYGROUND=false is a 404', async (t) => {
  const { app } = await buildTestApp(t, { API_KEYS: 'k1' })
  const page = await app.inject({ url: '/playground' })
  t.equal(page.statusCode, 200, 'open even with API_KEYS set')
  t.equal(page.headers['content-type'], 'text/html; charset=utf-8')
  t.equal(page.headers['content-security-policy'], PLAYGROUND_CSP)
  t.match(PLAYGROUND_CSP, /default-src 'self'/)
  t.notMatch(PLAYGROUND_CSP, /https?:|unsafe-inline|unsafe-eval|\*/, 'nothing beyond the own origin')
  t.notMatch(page.body, /https?:\/\//, 'no CDN or other origin in the page')
  t.match(page.body, /<label for="api-key">API key<\/label>/)
  for (const [path, type] of [['/playground/app.js', 'text/javascript'], ['/playground/style.css', 'text/css'], ['/playground/favicon.svg', 'image/svg+xml']] as const) {
    const asset = await app.inject({ url: path })
    t.equal(asset.statusCode, 200, path)
    t.match(String(asset.headers['content-type']), type)
    t.notMatch(asset.body, /https?:\/\/(?!www\.w3\.org)/, `${path} loads nothing from elsewhere`)
  }
  t.equal((await app.inject({ url: '/playground/' })).headers.location, '/playground')
  t.equal((await app.inject({ url: '/playground/nope.js' })).statusCode, 404)

  const { app: off } = await buildTestApp(t, { PLAYGROUND: 'false' })
  const gone = await off.inject({ url: '/playground' })
  t.equal(gone.statusCode, 404)
  t.same(gone.json(), { detail: 'Not Found' })
})

/**
 * Collects page errors, console errors (CSP violations show up there) and failed responses. A 404 of
 * /api/v1/models is expected while the service has no model list: the page falls back to the health endpoint.
 */
function watchErrors (page: Page): string[] {
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

for (const viewport of VIEWPORTS) {
  test(`in Chromium at ${viewport.width}x${viewport.height}: send, streamed reply, tool call with its result, model picker, new chat`, async (t) => {
    const browser = await launchBrowser(t)
    if (browser === null) return
    const { app } = await buildTestApp(t, { ...ROOMY_LIMITS, MODELS: 'offline-a,offline-b' })
    const base = await listen(t, app)
    const context = await browser.newContext({ viewport: { width: viewport.width, height: viewport.height } })
    t.teardown(() => context.close())
    const page = await context.newPage()
    const errors = watchErrors(page)
    await page.goto(`${base}/playground`)

    const key = page.getByLabel('API key')
    t.equal(await key.getAttribute('type'), 'password', 'the API key field is a password field with a real label')
    const picker = page.getByLabel('Model')
    await page.waitForFunction("document.querySelector('#model option')?.textContent !== 'loading…'")
    const options = await picker.locator('option').allTextContents()
    t.ok(options.some((o) => o.includes('offline-a')), `the picker names the default model (${options.join(', ')})`)

    await page.getByRole('textbox', { name: 'Message' }).fill('what is 2+3')
    await page.getByRole('button', { name: 'Send' }).click()
    const reply = page.locator('.msg.assistant .bubble').last()
    await reply.filter({ hasText: 'The result is 5.' }).waitFor()
    const tool = page.locator('.msg.assistant .tool').first()
    t.equal(await tool.locator('.name').textContent(), 'calculate_expression')
    t.match(await tool.locator('.tool-input').textContent(), /"expression": "2\+3"/)
    t.equal(await tool.locator('.tool-output').textContent(), '5')
    t.equal(await page.locator('.msg.user .bubble').textContent(), 'what is 2+3')
    await page.screenshot({ path: screenshotPath(`${viewport.name}-tool-call`) })

    // A second turn carries the first one's tool part back; the offline model echoes.
    await page.getByRole('textbox', { name: 'Message' }).fill('thanks')
    await page.getByRole('textbox', { name: 'Message' }).press('Enter')
    await page.locator('.msg.assistant .bubble', { hasText: 'Echo: thanks' }).waitFor()
    t.equal(await page.locator('.msg').count(), 4)

    const box = await page.getByRole('button', { name: 'Send' }).boundingBox()
    t.ok(box !== null && box.x + box.width <= viewport.width && box.y + box.height <= viewport.height, 'Send is on screen')
    const overflow = await page.evaluate('document.documentElement.scrollWidth - document.documentElement.clientWidth')
    t.equal(overflow, 0, 'no sideways scrolling')

    await page.getByRole('button', { name: 'New chat' }).click()
    await page.locator('#empty').waitFor()
    t.equal(await page.locator('.msg').count(), 0, 'new chat clears the conversation')
    await page.screenshot({ path: screenshotPath(`${viewport.name}-new-chat`) })
    t.same(errors, [], 'no page errors and no CSP violations')
  })
}

test('in Chromium: a missing key is shown as text; with the key the chat works', async (t) => {
  const browser = await launchBrowser(t)
  if (browser === null) return
  const { app } = await buildTestApp(t, { ...ROOMY_LIMITS, API_KEYS: 'secret-key' })
  const base = await listen(t, app)
  const context = await browser.newContext({ viewport: { width: 390, height: 844 } })
  t.teardown(() => context.close())
  const page = await context.newPage()
  await page.goto(`${base}/playground`)
  await page.getByRole('textbox', { name: 'Message' }).fill('hello')
  await page.getByRole('button', { name: 'Send' }).click()
  const alert = page.getByRole('alert')
  await alert.waitFor()
  t.match(await alert.textContent(), /401.*Invalid API Key\. Enter a valid API key above\./)
  t.equal(await page.locator('.msg').count(), 0, 'the refused message is not in the conversation')
  t.equal(await page.getByRole('textbox', { name: 'Message' }).inputValue(), 'hello', 'it is back in the textbox')
  await page.screenshot({ path: screenshotPath('phone-error') })

  await page.getByLabel('API key').fill('secret-key')
  await page.getByLabel('API key').dispatchEvent('change')
  await page.getByRole('button', { name: 'Send' }).click()
  await page.locator('.msg.assistant .bubble', { hasText: 'Echo: hello' }).waitFor()
  t.ok(await alert.isHidden(), 'the error is cleared by the next send')
})

test('in Chromium: a reload during a reply picks the reply up again (reconnect route) and finishes it once', RECONNECT_TODO, async (t) => {
  const browser = await launchBrowser(t)
  if (browser === null) return
  const { app, fake } = await buildFakeApp(t, ROOMY_LIMITS)
  const base = await listen(t, app)
  const words = Array.from({ length: 24 }, (_, i) => `word${i + 1}`).join(' ')
  fake.enqueue({ kind: 'text', text: words, chunkDelayMs: 120 })
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } })
  t.teardown(() => context.close())
  const page = await context.newPage()
  const errors = watchErrors(page)
  await page.goto(`${base}/playground`)
  await page.getByRole('textbox', { name: 'Message' }).fill('tell me a long story')
  await page.getByRole('button', { name: 'Send' }).click()
  await page.locator('.msg.assistant .bubble', { hasText: 'word3' }).waitFor({ timeout: 15_000 })
  t.notOk(await page.locator('.msg.assistant .bubble', { hasText: 'word24' }).count(), 'reloading while the reply is still streaming')
  await page.reload()
  await page.locator('.msg.assistant .bubble', { hasText: 'word24' }).waitFor({ timeout: 15_000 })
  t.equal(await page.locator('.msg.assistant .bubble').textContent(), words, 'the whole reply, once, after the reload')
  t.equal(await page.locator('.msg.assistant').count(), 1, 'one assistant message (the replay replaced the partial one)')
  t.equal(await page.locator('.msg.user .bubble').textContent(), 'tell me a long story')
  t.equal(fake.requests.length, 1, 'the model was called once: the reload followed the same run')
  await page.screenshot({ path: screenshotPath('desktop-resumed') })
  t.same(errors, [], 'no page errors')
})
