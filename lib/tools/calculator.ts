// The calculate_expression tool (DECISIONS 4 and 24): expr-eval-fork parses and evaluates; in front of it, the grammar of
// DECISIONS 4 as an allow-list (numbers, + - * / ^ **, parentheses, unary signs), which also words every refusal with
// its position. The scanner here is shared with the finder of expressions in text (lib/llm/arithmetic-in-text.ts).
import { Parser } from 'expr-eval-fork'

/** Longest expression `calculate` accepts, in characters: 1,000 or more is a calculation error (DECISIONS 24). */
export const MAX_EXPRESSION_LENGTH = 999
/** Deepest nesting `calculate` accepts: parentheses, unary signs and power exponents each add a level. */
export const MAX_NESTING_DEPTH = 100
/** Prefix of every failure `calculate` returns. */
export const CALCULATION_ERROR_PREFIX = 'Calculation error: '

const ALLOWED = 'only numbers, + - * / ^ ** and parentheses are allowed'

type Operator = '+' | '-' | '*' | '/' | '^'
type Token =
  | { kind: 'number', value: number, text: string, pos: number }
  | { kind: 'op', op: Operator, text: string, pos: number }
  | { kind: '(' | ')' | 'end', text: string, pos: number }

class CalculationError extends Error {}

/** True for an ASCII digit. */
export const isDigit = (ch: string | undefined): boolean => ch !== undefined && ch >= '0' && ch <= '9'
const isNameStart = (ch: string | undefined): boolean => ch !== undefined && /[A-Za-z_$]/.test(ch)
/** True for a character that may continue a name (letters, digits, `_`, `$`). */
export const isNamePart = (ch: string | undefined): boolean => ch !== undefined && /[\w$]/.test(ch)

/** End index of the number lexeme starting at `i` (digits, optional fraction, optional exponent), or `i` if none. */
export function scanNumber (text: string, i: number): number {
  let j = i
  while (isDigit(text[j])) j++
  const intDigits = j - i
  if (text[j] === '.') {
    const afterDot = j + 1
    let k = afterDot
    while (isDigit(text[k])) k++
    if (intDigits === 0 && k === afterDot) return i
    j = k
  } else if (intDigits === 0) {
    return i
  }
  if (text[j] === 'e' || text[j] === 'E') {
    let k = j + 1
    if (text[k] === '+' || text[k] === '-') k++
    if (isDigit(text[k])) {
      while (isDigit(text[k])) k++
      j = k
    }
  }
  return j
}

function describeChar (ch: string): string {
  const code = ch.codePointAt(0) ?? 0
  return code < 32 || code === 127 ? `U+${code.toString(16).toUpperCase().padStart(4, '0')}` : `'${ch}'`
}

function tokenize (text: string): Token[] {
  const tokens: Token[] = []
  let i = 0
  while (i < text.length) {
    const ch = text[i] as string
    const pos = i + 1
    if (/\s/.test(ch)) {
      i++
    } else if (isDigit(ch) || ch === '.') {
      const end = scanNumber(text, i)
      if (end === i) throw new CalculationError(`misplaced '.' at position ${pos}`)
      const lexeme = text.slice(i, end)
      const value = Number(lexeme)
      if (!Number.isFinite(value)) {
        const shown = lexeme.length > 30 ? `${lexeme.slice(0, 30)}...` : lexeme
        throw new CalculationError(`number ${shown} at position ${pos} is too large`)
      }
      tokens.push({ kind: 'number', value, text: lexeme, pos })
      i = end
    } else if (ch === '*' && text[i + 1] === '*') {
      tokens.push({ kind: 'op', op: '^', text: '**', pos })
      i += 2
    } else if (ch === '+' || ch === '-' || ch === '*' || ch === '/' || ch === '^') {
      tokens.push({ kind: 'op', op: ch, text: ch, pos })
      i++
    } else if (ch === '(' || ch === ')') {
      tokens.push({ kind: ch, text: ch, pos })
      i++
    } else if (isNameStart(ch)) {
      let j = i + 1
      while (isNamePart(text[j])) j++
      const name = j - i > 30 ? `${text.slice(i, i + 30)}...` : text.slice(i, j)
      throw new CalculationError(`unsupported name '${name}' at position ${pos} (${ALLOWED})`)
    } else {
      const full = String.fromCodePoint(text.codePointAt(i) ?? 0)
      throw new CalculationError(`unsupported character ${describeChar(full)} at position ${pos} (${ALLOWED})`)
    }
  }
  tokens.push({ kind: 'end', text: '', pos: text.length + 1 })
  return tokens
}

const where = (token: Token): string =>
  token.kind === 'end' ? 'at the end of the expression' : `'${token.text}' at position ${token.pos}`

/**
 * Checks the token sequence against the grammar without evaluating it: an operand (number, `(`, unary sign) where one
 * is due, an operator (binary, `)`, the end) after it, balanced parentheses, and at most MAX_NESTING_DEPTH levels of
 * parentheses, signs and power exponents (a sign or exponent stays open until a looser operator, `)` or the end).
 */
function checkGrammar (tokens: Token[]): void {
  // One entry per open parenthesis level (the outermost first): its `(` and how many signs and exponents are open in it.
  const levels: Array<{ open: Token | undefined, pending: number }> = [{ open: undefined, pending: 0 }]
  let depth = 0
  let operand = true
  const enter = (): void => {
    if (++depth > MAX_NESTING_DEPTH) {
      throw new CalculationError(`the expression is nested too deeply (more than ${MAX_NESTING_DEPTH} levels of parentheses, signs or powers)`)
    }
  }
  const current = () => levels[levels.length - 1] as { open: Token | undefined, pending: number }
  const closePending = (): void => {
    depth -= current().pending
    current().pending = 0
  }
  for (const token of tokens) {
    if (operand) {
      if (token.kind === 'number') {
        operand = false
      } else if (token.kind === '(') {
        enter()
        levels.push({ open: token, pending: 0 })
      } else if (token.kind === 'op' && (token.op === '+' || token.op === '-')) {
        enter()
        current().pending++
      } else {
        throw new CalculationError(`expected a number or '(' ${token.kind === 'end' ? '' : 'but found '}${where(token)}`)
      }
      continue
    }
    if (token.kind === 'op') {
      if (token.op === '^') {
        enter()
        current().pending++
      } else {
        closePending()
      }
      operand = true
    } else if (token.kind === ')') {
      if (levels.length === 1) throw new CalculationError(`unmatched ')' at position ${token.pos}`)
      closePending()
      levels.pop()
      depth--
    } else if (token.kind === 'end') {
      const open = current().open
      if (open !== undefined) throw new CalculationError(`missing ')' to close '(' at position ${open.pos}`)
    } else {
      throw new CalculationError(`missing operator before ${where(token)}`)
    }
  }
}

/**
 * expr-eval-fork with nothing beyond DECISIONS 4: no constants (PI, E, true), no functions, no named or other unary
 * operators, no comparison, logical, conditional, assignment, remainder, factorial, concatenation or `in`, no member
 * access. The five arithmetic operators are its own, with the checks of DECISIONS 4 (a division by zero or a
 * non-finite result is a calculation error, reported where evaluation meets it).
 */
function createParser (): Parser {
  const parser = new Parser({
    allowMemberAccess: false,
    operators: {
      add: true,
      subtract: true,
      multiply: true,
      divide: true,
      power: true,
      comparison: false,
      concatenate: false,
      conditional: false,
      factorial: false,
      logical: false,
      remainder: false,
      in: false,
      assignment: false,
      fndef: false,
      random: false,
      min: false,
      max: false,
      length: false,
    },
  })
  parser.consts = {}
  parser.functions = {}
  const unary = parser.unaryOps as Record<string, unknown>
  for (const name of Object.keys(unary)) if (name !== '-' && name !== '+') Reflect.deleteProperty(unary, name)
  const checked = (result: number, reason: () => string): number => {
    if (Number.isFinite(result)) return result
    throw new CalculationError(reason())
  }
  const tooLarge = () => 'the result is too large to represent'
  // The type declarations leave out binaryOps, the table the parser reads its binary operators from.
  ;(parser as unknown as { binaryOps: Record<string, (a: number, b: number) => number> }).binaryOps = {
    '+': (a: number, b: number) => checked(a + b, tooLarge),
    '-': (a: number, b: number) => checked(a - b, tooLarge),
    '*': (a: number, b: number) => checked(a * b, tooLarge),
    '/': (a: number, b: number) => {
      if (b === 0) throw new CalculationError('division by zero')
      return checked(a / b, tooLarge)
    },
    '^': (a: number, b: number) => checked(a ** b, () =>
      a === 0
        ? 'division by zero (0 raised to a negative power)'
        : Number.isNaN(a ** b) ? 'a negative number raised to a fractional power has no real result' : tooLarge()),
  }
  return parser
}

const parser = createParser()

/** expr-eval's compiled instructions this grammar can produce: numbers, unary signs, the five binary operators. */
const ALLOWED_INSTRUCTIONS = new Set(['INUMBER', 'IOP1:-', 'IOP1:+', 'IOP2:+', 'IOP2:-', 'IOP2:*', 'IOP2:/', 'IOP2:^'])

interface Instruction { type: string, value: unknown }

function allowedInstruction ({ type, value }: Instruction): boolean {
  if (type === 'INUMBER') return typeof value === 'number' && Number.isFinite(value)
  return ALLOWED_INSTRUCTIONS.has(`${type}:${String(value)}`)
}

/** Checks length, emptiness and the grammar, then evaluates with expr-eval-fork; throws CalculationError on any failure. */
function evaluate (expression: string): number {
  if (expression.length > MAX_EXPRESSION_LENGTH) {
    throw new CalculationError(`the expression is too long (${expression.length} characters; at most ${MAX_EXPRESSION_LENGTH})`)
  }
  if (expression.trim() === '') throw new CalculationError('the expression is empty')
  checkGrammar(tokenize(expression))
  // `**` is expr-eval's `^` (right-associative, above unary minus); the space keeps every position where it was.
  const compiled = parser.parse(expression.replaceAll('**', '^ '))
  // The grammar check admits nothing else; this keeps it so should expr-eval ever read more into the same text.
  const instructions = (compiled as unknown as { tokens: Instruction[] }).tokens
  if (!instructions.every(allowedInstruction)) throw new CalculationError(ALLOWED)
  const value: unknown = compiled.evaluate({})
  if (typeof value !== 'number') throw new CalculationError(ALLOWED)
  return value
}

/** Prints safe integers exactly, without a decimal point; anything else rounded to 12 significant digits (0.1+0.2 gives 0.3). */
function formatNumber (value: number): string {
  if (value === 0) return '0'
  if (Number.isSafeInteger(value)) return String(value)
  return String(Number(value.toPrecision(12)))
}

/**
 * Evaluates an arithmetic expression: numbers (`2`, `.5`, `2.50`, `1e3`), `+ - * /`, powers written `^` or `**`
 * (right-associative; `-2^2` is -4, `2^-1` is 0.5), parentheses, unary minus and plus.
 * Never throws: every failure is a string beginning `Calculation error: ` with the reason.
 */
export function calculate (expression: string): string {
  try {
    if (typeof expression !== 'string') throw new CalculationError('the expression must be a string')
    const value = evaluate(expression)
    if (!Number.isFinite(value)) return `${CALCULATION_ERROR_PREFIX}the result is not a finite number`
    return formatNumber(value)
  } catch (error) {
    if (error instanceof CalculationError) return CALCULATION_ERROR_PREFIX + error.message
    return `${CALCULATION_ERROR_PREFIX}the expression could not be evaluated`
  }
}
