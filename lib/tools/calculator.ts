// The calculate_expression tool: a small, safe arithmetic parser and evaluator (no eval), plus a finder for expressions in text.

/** Longest expression `calculate` accepts, in characters. */
export const MAX_EXPRESSION_LENGTH = 1000
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

interface Evaluation { value: number, mathError?: string }

/**
 * Parses and evaluates the tokens by precedence climbing. Syntax and limit errors throw at once;
 * math errors (division by zero, overflow) are recorded and reported once the whole input has parsed.
 */
function evaluateTokens (tokens: Token[]): Evaluation {
  let index = 0
  let depth = 0
  let mathError: string | undefined

  const peek = (): Token => tokens[index] as Token
  const isOp = (token: Token, ...ops: Operator[]): token is Extract<Token, { kind: 'op' }> =>
    token.kind === 'op' && ops.includes(token.op)
  const enter = (): void => {
    if (++depth > MAX_NESTING_DEPTH) {
      throw new CalculationError(`the expression is nested too deeply (more than ${MAX_NESTING_DEPTH} levels of parentheses, signs or powers)`)
    }
  }
  const fail = (reason: string): number => {
    mathError ??= reason
    return Number.NaN
  }

  const apply = (op: Operator, a: number, b: number): number => {
    if (Number.isNaN(a) || Number.isNaN(b)) return Number.NaN
    if (op === '/' && b === 0) return fail('division by zero')
    const result = op === '+' ? a + b : op === '-' ? a - b : op === '*' ? a * b : op === '/' ? a / b : a ** b
    if (Number.isFinite(result)) return result
    if (op === '^' && a === 0) return fail('division by zero (0 raised to a negative power)')
    if (Number.isNaN(result)) return fail('a negative number raised to a fractional power has no real result')
    return fail('the result is too large to represent')
  }

  const unexpected = (token: Token): never => {
    if (token.kind === 'number' || token.kind === '(') throw new CalculationError(`missing operator before ${where(token)}`)
    if (token.kind === ')') throw new CalculationError(`unmatched ')' at position ${token.pos}`)
    throw new CalculationError(`unexpected ${where(token)}`)
  }

  function parsePrimary (): number {
    const token = peek()
    if (token.kind === 'number') {
      index++
      return token.value
    }
    if (token.kind === '(') {
      index++
      enter()
      const value = parseExpression()
      const close = peek()
      if (close.kind === 'end') throw new CalculationError(`missing ')' to close '(' at position ${token.pos}`)
      if (close.kind !== ')') unexpected(close)
      index++
      depth--
      return value
    }
    throw new CalculationError(`expected a number or '(' ${token.kind === 'end' ? '' : 'but found '}${where(token)}`)
  }

  function parsePower (): number {
    const base = parsePrimary()
    if (!isOp(peek(), '^')) return base
    index++
    enter()
    const exponent = parseUnary()
    depth--
    return apply('^', base, exponent)
  }

  function parseUnary (): number {
    const token = peek()
    if (!isOp(token, '+', '-')) return parsePower()
    index++
    enter()
    const value = parseUnary()
    depth--
    return token.op === '-' ? -value : value
  }

  function parseTerm (): number {
    let value = parseUnary()
    for (let token = peek(); isOp(token, '*', '/'); token = peek()) {
      index++
      value = apply(token.op, value, parseUnary())
    }
    return value
  }

  function parseExpression (): number {
    let value = parseTerm()
    for (let token = peek(); isOp(token, '+', '-'); token = peek()) {
      index++
      value = apply(token.op, value, parseTerm())
    }
    return value
  }

  const value = parseExpression()
  const rest = peek()
  if (rest.kind !== 'end') unexpected(rest)
  return mathError === undefined ? { value } : { value, mathError }
}

/** Checks length and emptiness, then tokenizes and evaluates; throws CalculationError on any failure. */
function evaluate (expression: string): Evaluation {
  if (expression.length > MAX_EXPRESSION_LENGTH) {
    throw new CalculationError(`the expression is too long (${expression.length} characters; the limit is ${MAX_EXPRESSION_LENGTH})`)
  }
  if (expression.trim() === '') throw new CalculationError('the expression is empty')
  return evaluateTokens(tokenize(expression))
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
    const { value, mathError } = evaluate(expression)
    if (mathError !== undefined) return CALCULATION_ERROR_PREFIX + mathError
    if (!Number.isFinite(value)) return `${CALCULATION_ERROR_PREFIX}the result is not a finite number`
    return formatNumber(value)
  } catch (error) {
    if (error instanceof CalculationError) return CALCULATION_ERROR_PREFIX + error.message
    return `${CALCULATION_ERROR_PREFIX}the expression could not be evaluated`
  }
}
