// The playground in Chromium, desktop and phone: a call waiting for approval shows Approve and Deny; each continues the reply.
import { test } from 'tap'
import { ROOMY_LIMITS, upstreamMessages } from './helpers/agent.js'
import { countingTool } from './helpers/approval.js'
import { launchBrowser, screenshotPath, watchErrors } from './helpers/browser.js'
import { buildFakeApp, listen } from './helpers/fake-app.js'

for (const [name, viewport] of [['desktop', { width: 1280, height: 800 }], ['phone', { width: 390, height: 844 }]] as const) {
  test(`in Chromium (${name}): Approve runs the call once and the reply goes on; Deny runs nothing and tells the model`, async (t) => {
    const browser = await launchBrowser(t)
    if (browser === null) return
    const { app, fake } = await buildFakeApp(t, { ...ROOMY_LIMITS, TOOL_APPROVAL_REQUIRED: 'mail__*' })
    const mail = countingTool()
    app.tools.setSource('mcp:mail', [mail.tool])
    const base = await listen(t, app)
    const context = await browser.newContext({ viewport })
    t.teardown(() => context.close())
    const page = await context.newPage()
    const errors = watchErrors(page)
    await page.goto(`${base}/playground`)

    fake.enqueue({ kind: 'tool_use', text: 'Sending.', tools: [{ name: 'mail__send', input: { to: 'ada' } }] }, { kind: 'text', text: 'Mail sent to Ada.' })
    await page.getByRole('textbox', { name: 'Message' }).fill('mail Ada')
    await page.getByRole('button', { name: 'Send' }).click()
    const approve = page.getByRole('button', { name: 'Approve' })
    await approve.waitFor({ timeout: 15_000 })
    t.ok(await page.getByRole('button', { name: 'Deny' }).isVisible(), 'Deny beside Approve')
    t.match(await page.locator('.tool').textContent(), /mail__send.*needs approval/s)
    t.equal(mail.runs.length, 0, 'nothing ran before the answer')
    await page.screenshot({ path: screenshotPath(`${name}-approval`) })
    await approve.click()
    await page.locator('.msg.assistant .bubble', { hasText: 'Mail sent to Ada.' }).waitFor({ timeout: 15_000 })
    t.same(mail.runs, [{ to: 'ada' }], 'ran once')
    t.match(await page.locator('.tool .tool-output').textContent(), /sent to ada/)
    t.equal(await page.locator('.msg.assistant').count(), 1, 'the reply went on in the same message')

    fake.enqueue({ kind: 'tool_use', tools: [{ name: 'mail__send', input: { to: 'bob' } }] }, { kind: 'text', text: 'I did not send it.' })
    await page.getByRole('textbox', { name: 'Message' }).fill('mail Bob')
    await page.getByRole('button', { name: 'Send' }).click()
    const deny = page.getByRole('button', { name: 'Deny' })
    await deny.waitFor({ timeout: 15_000 })
    await deny.click()
    await page.locator('.msg.assistant .bubble', { hasText: 'I did not send it.' }).waitFor({ timeout: 15_000 })
    t.equal(mail.runs.length, 1, 'the denied call did not run')
    t.match(await page.locator('.msg.assistant').last().locator('.tool').textContent(), /denied/)
    t.match(upstreamMessages(fake, 3).at(-1)?.content, [{ type: 'tool_result', content: 'Tool call denied by the user.', is_error: true }])
    await page.screenshot({ path: screenshotPath(`${name}-denied`) })
    t.same(errors, [], 'no page errors')
  })
}
