// GET /playground: assets and policy (inject), then the page in Debian's Chromium at desktop and phone sizes.
import { test } from 'tap'
import { buildTestApp } from './helpers/app.js'
import { ROOMY_LIMITS } from './helpers/agent.js'
import { listen } from './helpers/fake-app.js'
import { launchBrowser, screenshotPath, watchErrors } from './helpers/browser.js'
import { PLAYGROUND_CSP } from '../routes/playground.js'

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
