// Issue 11 point 3: TRUST_PROXY as false, a hop count, a list of addresses/CIDRs, or true (warned).
import { test } from 'tap'
import { randomUUID } from 'node:crypto'
import type { FastifyPluginAsync } from 'fastify'
import { ConfigError, loadConfig } from '../../lib/config/config.js'
import { buildTestApp } from '../helpers/app.js'

const unversioned: FastifyPluginAsync = async (app) => {
  app.get('/whoami', async (request) => ({ ip: request.ip }))
}
const extraRoutes = { unversioned }
const randomIp = () => `198.18.${Math.floor(Math.random() * 256)}.${Math.floor(Math.random() * 256)}`

test('TRUST_PROXY values', async (t) => {
  const trust = (value: string) => loadConfig({ env: { TRUST_PROXY: value } }).trustProxy
  t.equal(trust('false'), false)
  t.equal(trust('0'), false, 'no hops')
  t.equal(trust('true'), true)
  t.equal(loadConfig({ env: {} }).trustProxy, false, 'default')
  const hops = trust('2')
  t.type(hops, 'function', 'a hop count is a function of the hop index')
  if (typeof hops === 'function') t.same([0, 1, 2, 3].map((hop) => hops('10.0.0.1', hop)), [true, true, false, false])
  t.same(trust('10.0.0.0/8, 127.0.0.1,::1, fd00::/8,loopback'), ['10.0.0.0/8', '127.0.0.1', '::1', 'fd00::/8', 'loopback'])
  for (const bad of ['yes', '10.0.0.0/33', '10.0.0.1/8/2', 'proxy.example', '1.5', '-1']) {
    t.throws(() => trust(bad), ConfigError, bad)
    t.throws(() => trust(bad), /^Invalid configuration: TRUST_PROXY /, `${bad}: one line naming the variable`)
  }
})

test('with a hop count, a rotating X-Forwarded-For does not buy a fresh quota', async (t) => {
  const { app } = await buildTestApp(t, { TRUST_PROXY: '1', RATE_LIMIT_PER_MINUTE: '2' }, { extraRoutes })
  const get = (forwardedFor: string) =>
    app.inject({ method: 'GET', url: '/whoami', remoteAddress: '10.0.0.5', headers: { 'x-forwarded-for': forwardedFor } })
  let res = await get(`${randomIp()}, 203.0.113.7`)
  t.equal(res.statusCode, 200)
  t.same(res.json(), { ip: '203.0.113.7' }, 'the client is the address the proxy appended')
  t.equal((await get(`${randomIp()}, 203.0.113.7`)).statusCode, 200)
  for (let i = 0; i < 5; i++) t.equal((await get(`${randomIp()}, ${randomIp()}, 203.0.113.7`)).statusCode, 429, 'forged entries change nothing')
  res = await get(`${randomIp()}, 203.0.113.8`)
  t.equal(res.statusCode, 200, 'another client behind the proxy has its own quota')
  t.same(res.json(), { ip: '203.0.113.8' })
  const direct = await app.inject({ method: 'GET', url: '/whoami', remoteAddress: '10.0.0.6' })
  t.same(direct.json(), { ip: '10.0.0.6' }, 'no header: the peer')
})

test('with a list, only the listed proxies may set the client address', async (t) => {
  const { app } = await buildTestApp(t, { TRUST_PROXY: '10.0.0.0/8' }, { extraRoutes })
  const via = async (remoteAddress: string) =>
    (await app.inject({ method: 'GET', url: '/whoami', remoteAddress, headers: { 'x-forwarded-for': '203.0.113.9' } })).json()
  t.same(await via('10.1.2.3'), { ip: '203.0.113.9' }, 'a listed proxy')
  t.same(await via('192.0.2.1'), { ip: '192.0.2.1' }, 'anyone else: the header is ignored')
})

test('TRUST_PROXY=true trusts every hop and warns at startup, naming the variable', async (t) => {
  const { app, logs } = await buildTestApp(t, { TRUST_PROXY: 'true' }, { extraRoutes })
  const res = await app.inject({ method: 'GET', url: '/whoami', remoteAddress: '192.0.2.1', headers: { 'x-forwarded-for': `${randomUUID().length}.1.1.1` } })
  t.same(res.json(), { ip: '36.1.1.1' })
  t.ok(logs.lines.some((line) => line['level'] === 'warn' && /TRUST_PROXY=true/.test(String(line['msg']))), 'a startup warning names TRUST_PROXY')
  const quiet = await buildTestApp(t, { TRUST_PROXY: '1' }, { extraRoutes })
  t.notOk(quiet.logs.lines.some((line) => /TRUST_PROXY/.test(String(line['msg']))), 'no warning for a hop count')
})
