#!/usr/bin/env node
// Live heap growth between two V8 heap snapshots, by what the nodes are: self bytes and counts per
// "type:name" (closures by their function's name), largest growth first. For issue 45's held-streams row:
//   node bench/heap-diff.js before.heapsnapshot with.heapsnapshot [streams] [rows]
import { readFileSync } from 'node:fs'

function groups (file) {
  const { snapshot, nodes, strings } = JSON.parse(readFileSync(file, 'utf8'))
  const fields = snapshot.meta.node_fields
  const types = snapshot.meta.node_types[fields.indexOf('type')]
  const [typeAt, nameAt, sizeAt] = ['type', 'name', 'self_size'].map((field) => fields.indexOf(field))
  const byKey = new Map()
  for (let i = 0; i < nodes.length; i += fields.length) {
    const type = types[nodes[i + typeAt]]
    const name = type === 'string' || type === 'concatenated string' || type === 'sliced string' ? '' : strings[nodes[i + nameAt]].slice(0, 80)
    const key = `${type}:${name}`
    const entry = byKey.get(key) ?? { count: 0, bytes: 0 }
    entry.count++
    entry.bytes += nodes[i + sizeAt]
    byKey.set(key, entry)
  }
  return byKey
}

const [beforeFile, withFile, streamsArg = '1000', rowsArg = '60'] = process.argv.slice(2)
const streams = Number(streamsArg)
const before = groups(beforeFile)
const after = groups(withFile)
const rows = []
let total = 0
for (const [key, entry] of after) {
  const old = before.get(key) ?? { count: 0, bytes: 0 }
  const bytes = entry.bytes - old.bytes
  total += bytes
  rows.push({ key, bytes, count: entry.count - old.count })
}
for (const [key, old] of before) if (!after.has(key)) { total -= old.bytes; rows.push({ key, bytes: -old.bytes, count: -old.count }) }
rows.sort((a, b) => b.bytes - a.bytes)
console.log(`total growth ${(total / streams / 1024).toFixed(2)} KB a stream over ${streams}`)
for (const row of rows.slice(0, Number(rowsArg))) {
  console.log(`${(row.bytes / streams).toFixed(0).padStart(7)} B/stream ${(row.count / streams).toFixed(2).padStart(7)} /stream  ${row.key}`)
}
