#!/usr/bin/env node
// Who holds the nodes of one kind in a V8 heap snapshot: counts and self bytes of the held nodes per retainer
// "type:name .edge", largest first (weak edges skipped). With bench/heap-diff.js, for the held-streams row (issue 45):
//   node bench/heap-retainers.js with.heapsnapshot object Map     (a node type, then its constructor or function name)
//   node bench/heap-retainers.js with.heapsnapshot "concatenated string"
import { readFileSync } from 'node:fs'

const [file, wantType, wantName = ''] = process.argv.slice(2)
const { snapshot, nodes, edges, strings } = JSON.parse(readFileSync(file, 'utf8'))
const nodeFields = snapshot.meta.node_fields
const edgeFields = snapshot.meta.edge_fields
const nodeTypes = snapshot.meta.node_types[nodeFields.indexOf('type')]
const edgeTypes = snapshot.meta.edge_types[edgeFields.indexOf('type')]
const [typeAt, nameAt, sizeAt, edgeCountAt] = ['type', 'name', 'self_size', 'edge_count'].map((field) => nodeFields.indexOf(field))
const [edgeTypeAt, edgeNameAt, toAt] = ['type', 'name_or_index', 'to_node'].map((field) => edgeFields.indexOf(field))
const isString = (type) => type.includes('string')

/** "type:name" of the node at `index`; a string shows its first characters. */
function describe (index) {
  const type = nodeTypes[nodes[index + typeAt]]
  const name = strings[nodes[index + nameAt]]
  return `${type}:${isString(type) ? JSON.stringify(name.slice(0, 40)) : name.slice(0, 60)}`
}

/** Whether the node at `index` is one the caller asked about. */
function wanted (index) {
  const type = nodeTypes[nodes[index + typeAt]]
  return type === wantType && (isString(type) || strings[nodes[index + nameAt]] === wantName)
}

const byRetainer = new Map()
let edge = 0
for (let index = 0; index < nodes.length; index += nodeFields.length) {
  const edgeCount = nodes[index + edgeCountAt]
  for (let k = 0; k < edgeCount; k++, edge += edgeFields.length) {
    const to = edges[edge + toAt]
    const edgeType = edgeTypes[edges[edge + edgeTypeAt]]
    if (edgeType === 'weak' || !wanted(to)) continue
    const edgeName = edgeType === 'element' || edgeType === 'hidden' ? '[]' : strings[edges[edge + edgeNameAt]]
    const key = `${describe(index)} .${edgeName}`
    const entry = byRetainer.get(key) ?? { count: 0, bytes: 0 }
    entry.count++
    entry.bytes += nodes[to + sizeAt]
    byRetainer.set(key, entry)
  }
}
for (const [key, entry] of [...byRetainer].sort((a, b) => b[1].bytes - a[1].bytes).slice(0, 25)) {
  console.log(`${String(entry.count).padStart(7)} ${String(entry.bytes).padStart(9)} B  ${key}`)
}
