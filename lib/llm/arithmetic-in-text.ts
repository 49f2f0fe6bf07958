// Finds an arithmetic expression in free text, for the offline model's calculator rule (README "Models and providers").
import { isDigit, isNamePart, scanNumber } from '../tools/calculator.js'

type ScanToken = { kind: 'operand' | 'binary' | 'sign' | '(' | ')' | 'break', start: number, end: number }

/** Splits free text into the pieces an expression is made of; anything else (words, punctuation) is a `break`. */
function * scanText (text: string): Generator<ScanToken> {
  let i = 0
  while (i < text.length) {
    const ch = text[i] as string
    const start = i
    if (isNamePart(ch) && !isDigit(ch)) {
      while (isNamePart(text[i])) i++
      yield { kind: 'break', start, end: i }
    } else if (isDigit(ch) || (ch === '.' && isDigit(text[i + 1]))) {
      i = scanNumber(text, i)
      if (text[i - 1] === '.') i--
      yield { kind: 'operand', start, end: i }
    } else if (/\s/.test(ch)) {
      i++
    } else if (ch === '*' && text[i + 1] === '*') {
      i += 2
      yield { kind: 'binary', start, end: i }
    } else if (ch === '+' || ch === '-') {
      i++
      yield { kind: 'sign', start, end: i }
    } else if (ch === '*' || ch === '/' || ch === '^') {
      i++
      yield { kind: 'binary', start, end: i }
    } else if (ch === '(' || ch === ')') {
      i++
      yield { kind: ch, start, end: i }
    } else {
      i++
      yield { kind: 'break', start, end: i }
    }
  }
}

interface Level { start: number, hasBinary: boolean, bestEnd: number }

/**
 * Finds the first arithmetic expression embedded in natural text ("what is 2+3*4?" gives `2+3*4`).
 * It must hold at least one binary operator between numbers, so a lone number gives null.
 * Runs in linear time: one pass over the text with a stack of open parentheses, no backtracking.
 */
export function findArithmeticExpression (text: string): string | null {
  if (typeof text !== 'string') return null
  // levels[0] is the expression being read; levels[d] is the part inside its d-th still-open parenthesis.
  let levels: Level[] = []
  let expectOperand = true

  const best = (): string | null => {
    for (const level of levels) {
      if (level.bestEnd > level.start) return text.slice(level.start, level.bestEnd).trim()
    }
    return null
  }
  const completeAt = (level: Level, end: number): void => {
    if (level.hasBinary) level.bestEnd = end
  }

  for (const token of scanText(text)) {
    let accepted = true
    if (levels.length === 0) {
      if (token.kind !== 'operand' && token.kind !== 'sign' && token.kind !== '(') continue
      levels = [{ start: token.start, hasBinary: false, bestEnd: -1 }]
      expectOperand = true
    }
    const top = levels[levels.length - 1] as Level
    if (expectOperand) {
      if (token.kind === 'operand') {
        expectOperand = false
        completeAt(top, token.end)
      } else if (token.kind === '(') {
        levels.push({ start: token.end, hasBinary: false, bestEnd: -1 })
      } else if (token.kind !== 'sign') {
        accepted = false
      }
    } else if (token.kind === 'binary' || token.kind === 'sign') {
      top.hasBinary = true
      expectOperand = true
    } else if (token.kind === ')' && levels.length > 1) {
      levels.pop()
      const parent = levels[levels.length - 1] as Level
      parent.hasBinary ||= top.hasBinary
      completeAt(parent, token.end)
    } else {
      accepted = false
    }
    if (!accepted) {
      const found = best()
      if (found !== null) return found
      levels = []
      if (token.kind === 'operand' || token.kind === 'sign' || token.kind === '(') {
        levels = [{ start: token.start, hasBinary: false, bestEnd: -1 }]
        expectOperand = token.kind !== 'operand'
        if (token.kind === '(') levels.push({ start: token.end, hasBinary: false, bestEnd: -1 })
      }
    }
  }
  return best()
}
