import { test } from 'tap'
import SwaggerParser from '@apidevtools/swagger-parser'
import { buildTestApp } from '../helpers/app.js'

interface Operation { tags?: string[], summary?: string, operationId?: string, responses?: Record<string, unknown> }

test('/docs/json is a valid OpenAPI 3 document with version 1.0.0', async (t) => {
  const { app } = await buildTestApp(t)
  const res = await app.inject({ method: 'GET', url: '/docs/json' })
  t.equal(res.statusCode, 200)
  const doc = res.json()
  t.match(doc.openapi, /^3\./)
  t.equal(doc.info.version, '1.0.0')
  await t.resolves(SwaggerParser.validate(structuredClone(doc)), 'validates against the OpenAPI 3 schema')

  const operationIds = new Set<string>()
  for (const [path, item] of Object.entries(doc.paths as Record<string, Record<string, Operation>>)) {
    for (const [method, op] of Object.entries(item)) {
      t.ok(op.tags?.length, `${method} ${path} has tags`)
      t.ok(op.summary, `${method} ${path} has a summary`)
      t.ok(op.operationId, `${method} ${path} has an operationId`)
      t.notOk(operationIds.has(op.operationId ?? ''), 'operationIds are unique')
      operationIds.add(op.operationId ?? '')
    }
  }
  t.ok(doc.paths['/health'] && doc.paths['/api/v1/health'] && doc.paths['/ready'], 'health routes are documented')
  t.notOk(Object.keys(doc.paths).some((path) => path.startsWith('/docs')), 'the docs do not document themselves')
})

test('/docs serves Swagger UI with local assets only', async (t) => {
  const { app } = await buildTestApp(t)
  let res = await app.inject({ method: 'GET', url: '/docs' })
  if (res.statusCode === 302) res = await app.inject({ method: 'GET', url: `/docs/${String(res.headers.location).replace(/^\.?\/?(docs\/)?/, '')}` })
  t.equal(res.statusCode, 200)
  t.match(res.headers['content-type'], /text\/html/)
  t.notMatch(res.body, /https?:\/\/(cdn|unpkg|cdnjs|jsdelivr)/, 'no CDN assets')
  const script = /src="\.?\/?([^"]+\.js)"/.exec(res.body)?.[1]
  t.ok(script, 'the page loads a local script')
  const asset = await app.inject({ method: 'GET', url: `/docs/${script?.replace(/^docs\//, '')}` })
  t.equal(asset.statusCode, 200, 'the script is served locally')
})
