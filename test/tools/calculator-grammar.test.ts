// The calculator accepts exactly the grammar of DECISIONS 4 (DECISIONS 24): every construct expr-eval knows beyond it is a
// calculation error, and random expressions of the grammar evaluate as a reference evaluation of their tree does.
import { test } from 'tap'
import { calculate, MAX_NESTING_DEPTH } from '../../lib/tools/calculator.js'

const PREFIX = 'Calculation error: '

test('every construct beyond the grammar is a calculation error', async (t) => {
  const refused: Record<string, string[]> = {
    variables: ['x', 'x + 1', '2 * y', 'e', 'Infinity', 'NaN'],
    constants: ['PI', 'E', 'true', 'false', 'null', 'undefined'],
    functions: ['sqrt(4)', 'abs(-1)', 'max(1, 2)', 'pow(2, 3)', 'random()', 'if(1, 2, 3)', 'sin 1', 'length 3', '2(3)', '(2)(3)'],
    'member access': ['constructor', '__proto__', 'a.b', '(1).constructor', 'x.__proto__.y', 'toString', 'prototype', 'valueOf()'],
    assignment: ['x = 1', 'x=1;x', 'f(x) = x', '(x = 2) * 3'],
    comparison: ['1 < 2', '1 > 2', '1 == 1', '1 != 2', '1 <= 2', '1 >= 2', '1 in [1]'],
    logical: ['1 and 2', '1 or 0', 'not 1', '!1', '3!', '1 && 1', '1 || 1'],
    conditional: ['1 ? 2 : 3', 'true ? 1 : 0'],
    strings: ['"1"', "'1'", '"a" || "b"', '`1`'],
    arrays: ['[1, 2]', '[1][0]', '[]', 'join(",", [1])'],
    'other operators and forms': ['2 % 3', '1; 2', '0x10', '0b10', '1_000', '1,5', '2 ^^ 3', '#1'],
  }
  for (const [kind, inputs] of Object.entries(refused)) {
    for (const input of inputs) {
      const result = calculate(input)
      t.ok(result.startsWith(PREFIX), `${kind}: ${JSON.stringify(input)} -> ${result}`)
    }
  }
  t.equal(calculate('x'), `${PREFIX}unsupported name 'x' at position 1 (only numbers, + - * / ^ ** and parentheses are allowed)`)
  t.equal(calculate('1 ? 2 : 3'), `${PREFIX}unsupported character '?' at position 3 (only numbers, + - * / ^ ** and parentheses are allowed)`)
  t.equal(calculate('"1"'), `${PREFIX}unsupported character '"' at position 1 (only numbers, + - * / ^ ** and parentheses are allowed)`)
})

test('1,000 characters or more is a calculation error', async (t) => {
  t.equal(calculate('1'.padStart(999, ' ')), '1')
  t.equal(calculate('1'.padStart(1000, ' ')), `${PREFIX}the expression is too long (1000 characters; at most 999)`)
})

/** A deterministic PRNG (mulberry32), so a failure can be replayed from its seed. */
function random (seed: number): () => number {
  let state = seed >>> 0
  return () => {
    state = (state + 0x6D2B79F5) >>> 0
    let x = Math.imul(state ^ (state >>> 15), 1 | state)
    x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296
  }
}

type Node =
  | { kind: 'num', text: string, value: number }
  | { kind: 'sign', sign: '-' | '+', operand: Node }
  | { kind: 'bin', op: '+' | '-' | '*' | '/' | '^', left: Node, right: Node }

/** Precedence of what a node renders as, without parentheses around it. */
function precedence (node: Node): number {
  if (node.kind === 'num') return 5
  if (node.kind === 'sign') return 3
  return node.op === '^' ? 4 : node.op === '*' || node.op === '/' ? 2 : 1
}

/** The reference: plain JavaScript arithmetic on the tree; undefined where DECISIONS 4 makes it an error. */
function reference (node: Node): number | undefined {
  if (node.kind === 'num') return node.value
  if (node.kind === 'sign') {
    const value = reference(node.operand)
    return value === undefined ? undefined : node.sign === '-' ? -value : value
  }
  const a = reference(node.left)
  const b = reference(node.right)
  if (a === undefined || b === undefined) return undefined
  if (node.op === '/' && b === 0) return undefined
  const value = node.op === '+' ? a + b : node.op === '-' ? a - b : node.op === '*' ? a * b : node.op === '/' ? a / b : a ** b
  return Number.isFinite(value) ? value : undefined
}

/** DECISIONS 4's printing: whole results without a point; others to 12 significant digits. */
function formatted (value: number): string {
  if (value === 0) return '0'
  if (Number.isSafeInteger(value)) return String(value)
  return String(Number(value.toPrecision(12)))
}

function generator (next: () => number) {
  const pick = <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)] as T
  const space = (): string => pick(['', '', '', ' ', '  '])
  function number (): Node {
    const whole = Math.floor(next() * 20)
    const form = pick(['int', 'int', 'int', 'dec', 'lead', 'exp'] as const)
    const text = form === 'dec'
      ? `${whole}.${Math.floor(next() * 100)}`
      : form === 'lead' ? `.${Math.floor(next() * 10)}` : form === 'exp' ? `${whole}e${pick(['', '+', '-'])}1` : String(whole)
    return { kind: 'num', text, value: Number(text) }
  }
  function tree (depth: number): Node {
    if (depth <= 0 || next() < 0.25) return number()
    const roll = next()
    if (roll < 0.16) return { kind: 'sign', sign: roll < 0.12 ? '-' : '+', operand: tree(depth - 1) }
    const op = pick(['+', '-', '*', '/', '^', '^'] as const)
    // Small exponents keep most results finite, so the comparison is mostly of values, not of errors.
    return { kind: 'bin', op, left: tree(depth - 1), right: op === '^' ? tree(Math.min(depth - 1, 1)) : tree(depth - 1) }
  }
  /** Renders with the parentheses the grammar needs, and now and then more. */
  function render (node: Node, needs: number): string {
    const inner = renderBare(node)
    return precedence(node) < needs || next() < 0.08 ? `(${space()}${inner}${space()})` : inner
  }
  function renderBare (node: Node): string {
    if (node.kind === 'num') return node.text
    if (node.kind === 'sign') return `${node.sign}${space()}${render(node.operand, 3)}`
    if (node.op === '^') {
      // Right-associative; a sign may start the exponent; the base is a number or parenthesised (-2^2 is -(2^2)).
      return `${render(node.left, 5)}${space()}${pick(['^', '**'])}${space()}${render(node.right, 3)}`
    }
    const p = precedence(node)
    return `${render(node.left, p)}${space()}${node.op}${space()}${render(node.right, p + 1)}`
  }
  return { tree, render }
}

test('fuzz: random expressions of the grammar evaluate as the reference does', async (t) => {
  const seed = Number(process.env['CALCULATOR_FUZZ_SEED'] ?? 20261128)
  const next = random(seed)
  const { tree, render } = generator(next)
  let compared = 0
  let errors = 0
  const failures: string[] = []
  for (let i = 0; i < 3000; i++) {
    const node = tree(1 + Math.floor(next() * 6))
    const text = render(node, 0)
    if (text.length > 999) continue
    const expected = reference(node)
    const got = calculate(text)
    if (expected === undefined) {
      errors++
      if (!got.startsWith(PREFIX)) failures.push(`${text} -> ${got}, expected a calculation error`)
    } else {
      compared++
      if (got !== formatted(expected)) failures.push(`${text} -> ${got}, expected ${formatted(expected)}`)
    }
  }
  t.same(failures.slice(0, 10), [], `seed ${seed}: ${compared} values and ${errors} errors compared`)
  t.ok(compared > 1500, `mostly values (${compared})`)
  t.ok(errors > 10, `some errors too (${errors})`)
})

test('fuzz: deep right-associative powers and signs stay within the nesting limit or are refused cleanly', async (t) => {
  const next = random(7)
  for (let i = 0; i < 200; i++) {
    const levels = 1 + Math.floor(next() * (MAX_NESTING_DEPTH + 20))
    const text = Array.from({ length: levels }, () => (next() < 0.5 ? '1^' : '-')).join('') + '1'
    const got = calculate(text)
    t.ok(got === '1' || got === '-1' || got.startsWith(`${PREFIX}the expression is nested too deeply`), `${text.slice(0, 40)}… -> ${got}`)
  }
})
