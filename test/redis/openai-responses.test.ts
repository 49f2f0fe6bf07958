// Stored responses of /v1/responses across replicas: two apps on one Redis (and on a Redis Cluster), the openai SDK as the client.
import { test, type Test } from 'tap'
import OpenAI from 'openai'
import { startFakeAnthropic } from '../fake-anthropic/server.js'
import { buildTestApp } from '../helpers/app.js'
import { fakeEnv, listen } from '../helpers/fake-app.js'
import { listKeys, requireRedis, requireRedisCluster } from '../helpers/redis.js'

const MODEL = 'claude-sonnet-5-5'

/** Two replicas over one fake upstream and one store (`appEnv`); a response made on one is read, continued and deleted through the other. */
async function twoReplicas (t: Test, appEnv: Record<string, string>, keys: () => Promise<string[]>) {
  const fake = await startFakeAnthropic()
  t.teardown(() => fake.close())
  const env = { ...fakeEnv(fake.url), ...appEnv, API_KEYS: 'sk-alice,sk-bob' }
  const one = await buildTestApp(t, env)
  const two = await buildTestApp(t, env)
  const urlOne = await listen(t, one.app)
  const urlTwo = await listen(t, two.app)
  const client = (url: string, key = 'sk-alice') => new OpenAI({ baseURL: `${url}/v1`, apiKey: key, maxRetries: 0 })
  const a = client(urlOne)
  const b = client(urlTwo)
  const bobOnTwo = client(urlTwo, 'sk-bob')

  const first = await a.responses.create({ model: MODEL, input: 'remember: blue' })
  t.match(await b.responses.retrieve(first.id), { id: first.id, output: [{ type: 'message' }] }, 'the other replica reads it')
  const stream = b.responses.stream({ model: MODEL, input: 'which colour?', previous_response_id: first.id })
  const second = await stream.finalResponse()
  t.equal(second.previous_response_id, first.id)
  t.match(JSON.stringify(fake.requests[1]?.body.messages), /remember: blue.*which colour\?/, 'continued through the other replica')
  t.ok(await bobOnTwo.responses.retrieve(first.id).catch((e: unknown) => e) instanceof OpenAI.NotFoundError, 'another identity sees nothing')
  await a.responses.delete(second.id)
  t.ok(await b.responses.retrieve(second.id).catch((e: unknown) => e) instanceof OpenAI.NotFoundError, 'deleted everywhere')
  const stored = (await keys()).filter((key) => key.includes('{resp:'))
  t.equal(stored.length, 1, 'one response key left under the prefix')
  t.match(stored[0], new RegExp(`^${appEnv['REDIS_PREFIX'] ?? ''}\\{resp:[0-9a-f]{64}\\}:${first.id}$`), 'hash-tagged per identity, no key in clear')
}

test('two replicas on one Redis share stored responses', async (t) => {
  const env = await requireRedis(t)
  if (env === null) return
  const admin = await env.connect()
  await twoReplicas(t, { REDIS_URL: env.url, REDIS_PREFIX: env.prefix }, async () => await listKeys(admin, env.prefix))
})

test('two replicas on a Redis Cluster share stored responses', async (t) => {
  const env = await requireRedisCluster(t)
  if (env === null) return
  await twoReplicas(t, { REDIS_URL: env.url, REDIS_CLUSTER: 'true', REDIS_PREFIX: env.prefix }, async () => await env.listKeys())
})
