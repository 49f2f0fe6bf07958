// Tests of the calculator: grammar, errors, limits, formatting and the expression finder.
import { test } from 'tap'
import { findArithmeticExpression } from '../../lib/llm/arithmetic-in-text.js'
import { calculate, MAX_EXPRESSION_LENGTH, MAX_NESTING_DEPTH } from '../../lib/tools/calculator.js'

const isCalcError = (result: string): boolean => result.startsWith('Calculation error: ')

test('precedence and associativity', async (t) => {
  t.equal(calculate('2+3*4'), '14')
  t.equal(calculate('(2+3)*4'), '20')
  t.equal(calculate('10-4-3'), '3')
  t.equal(calculate('100/10/5'), '2')
  t.equal(calculate('2*3^2'), '18')
  t.equal(calculate('1 + 2 * 3 - 4 / 2'), '5')
  t.equal(calculate('8 / 2 * 4'), '16')
})

test('power is right-associative in both spellings', async (t) => {
  t.equal(calculate('2^3^2'), '512')
  t.equal(calculate('2**3**2'), '512')
  t.equal(calculate('(2^3)^2'), '64')
  t.equal(calculate('2 ** 10'), '1024')
  t.equal(calculate('2^3**2'), '512')
})

test('unary minus and plus', async (t) => {
  t.equal(calculate('-2^2'), '-4')
  t.equal(calculate('(-2)^2'), '4')
  t.equal(calculate('2^-1'), '0.5')
  t.equal(calculate('2**-2'), '0.25')
  t.equal(calculate('-3'), '-3')
  t.equal(calculate('--3'), '3')
  t.equal(calculate('+3'), '3')
  t.equal(calculate('4 - -2'), '6')
  t.equal(calculate('3 * -2'), '-6')
  t.equal(calculate('-(2+3)'), '-5')
  t.equal(calculate('-0'), '0')
  t.equal(calculate('0 * -1'), '0')
})

test('decimals, exponents and whitespace', async (t) => {
  t.equal(calculate('.5 + .25'), '0.75')
  t.equal(calculate('2.50 * 2'), '5')
  t.equal(calculate('5.'), '5')
  t.equal(calculate('1e3 + 1'), '1001')
  t.equal(calculate('2.5E-1'), '0.25')
  t.equal(calculate('1e+2'), '100')
  t.equal(calculate('  \t 7 \n * 6  '), '42')
  t.equal(calculate('(1.5 + 2) ^ 2'), '12.25')
})

test('formatting hides float noise and prints whole numbers without a point', async (t) => {
  t.equal(calculate('0.1+0.2'), '0.3')
  t.equal(calculate('1.1*3'), '3.3')
  t.equal(calculate('0.1*3*10'), '3')
  t.equal(calculate('1/3'), '0.333333333333')
  t.equal(calculate('2/3'), '0.666666666667')
  t.equal(calculate('10/4'), '2.5')
  t.equal(calculate('2^52'), '4503599627370496')
  t.equal(calculate('2^60'), '1152921504610000000', 'beyond safe integers: 12 significant digits')
  t.equal(calculate('10^25'), '1e+25')
  t.equal(calculate('1/10^9'), '1e-9')
  t.notMatch(calculate('6/2'), /\./)
})

test('nesting up to the limit works', async (t) => {
  const depth = MAX_NESTING_DEPTH
  t.equal(calculate('('.repeat(depth) + '1+1' + ')'.repeat(depth)), '2')
  t.equal(calculate('-'.repeat(depth) + '5'), '5')
  t.equal(calculate('1^'.repeat(depth) + '1'), '1')
})

test('division by zero and non-finite results are errors', async (t) => {
  t.equal(calculate('1/0'), 'Calculation error: division by zero')
  t.equal(calculate('0/0'), 'Calculation error: division by zero')
  t.equal(calculate('5/(3-3)'), 'Calculation error: division by zero')
  t.equal(calculate('1/0 + 1/0'), 'Calculation error: division by zero')
  t.match(calculate('0^-1'), /^Calculation error: division by zero/)
  t.equal(calculate('9^9^9^9'), 'Calculation error: the result is too large to represent')
  t.equal(calculate('10^308*10'), 'Calculation error: the result is too large to represent')
  t.match(calculate('(-8)^(1/3)'), /^Calculation error: .*fractional power/)
  t.match(calculate('1e999'), /^Calculation error: number 1e999 .*too large/)
  t.equal(calculate('9'.repeat(400)), `Calculation error: number ${'9'.repeat(30)}... at position 1 is too large`)
})

test('syntax errors say what is wrong and where', async (t) => {
  t.equal(calculate(''), 'Calculation error: the expression is empty')
  t.equal(calculate('   '), 'Calculation error: the expression is empty')
  t.equal(calculate('2+'), 'Calculation error: expected a number or \'(\' at the end of the expression')
  t.equal(calculate('(2+3'), 'Calculation error: missing \')\' to close \'(\' at position 1')
  t.equal(calculate('2+3)'), 'Calculation error: unmatched \')\' at position 4')
  t.equal(calculate('2 3'), 'Calculation error: missing operator before \'3\' at position 3')
  t.equal(calculate('2(3)'), 'Calculation error: missing operator before \'(\' at position 2')
  t.equal(calculate('()'), 'Calculation error: expected a number or \'(\' but found \')\' at position 2')
  t.equal(calculate('*2'), 'Calculation error: expected a number or \'(\' but found \'*\' at position 1')
  t.equal(calculate('2***3'), 'Calculation error: expected a number or \'(\' but found \'*\' at position 4')
  t.equal(calculate('1.2.3'), 'Calculation error: missing operator before \'.3\' at position 4')
  t.equal(calculate('.'), 'Calculation error: misplaced \'.\' at position 1')
  t.equal(calculate('1 / 1/0 +'), 'Calculation error: expected a number or \'(\' at the end of the expression', 'syntax errors win over math errors')
})

test('names, functions, strings and other characters are refused', async (t) => {
  const cases: Array<[string, RegExp]> = [
    ['constructor', /^Calculation error: unsupported name 'constructor' at position 1 \(only numbers/],
    ['__proto__', /^Calculation error: unsupported name '__proto__' at position 1/],
    ['process.exit()', /^Calculation error: unsupported name 'process' at position 1/],
    ['2 + Math.PI', /^Calculation error: unsupported name 'Math' at position 5/],
    ['sqrt(4)', /^Calculation error: unsupported name 'sqrt'/],
    ['1,000 + 2', /^Calculation error: unsupported character ',' at position 2/],
    ['"1" + 2', /^Calculation error: unsupported character '"' at position 1/],
    ['[1].length', /^Calculation error: unsupported character '\['/],
    ['2 % 3', /^Calculation error: unsupported character '%'/],
    ['1 + \u0000', /^Calculation error: unsupported character U\+0000/],
    ['5 × 2', /^Calculation error: unsupported character '×'/],
    ['2 + 😀', /^Calculation error: unsupported character '😀'/],
    ['a'.repeat(500), /^Calculation error: unsupported name 'a{30}\.\.\.'/],
  ]
  for (const [input, expected] of cases) {
    t.match(calculate(input), expected, input.slice(0, 40))
  }
  t.equal(calculate(undefined as unknown as string), 'Calculation error: the expression must be a string')
  t.equal(calculate({ toString: () => '1+1' } as unknown as string), 'Calculation error: the expression must be a string')
})

test('limits: long and deeply nested input fail fast and cleanly', async (t) => {
  const started = Date.now()
  const tooDeep = MAX_NESTING_DEPTH + 1
  t.match(calculate('('.repeat(tooDeep) + '1' + ')'.repeat(tooDeep)), /^Calculation error: the expression is nested too deeply/)
  t.match(calculate('-'.repeat(tooDeep) + '1'), /^Calculation error: the expression is nested too deeply/)
  t.match(calculate('1^'.repeat(tooDeep) + '1'), /^Calculation error: the expression is nested too deeply/)
  t.match(calculate('-('.repeat(60) + '1' + ')'.repeat(60)), /^Calculation error: the expression is nested too deeply/)

  const tenThousand = '('.repeat(10_000) + '1' + ')'.repeat(10_000)
  t.equal(calculate(tenThousand), 'Calculation error: the expression is too long (20001 characters; at most 999)')
  t.equal(calculate('1+'.repeat(50_000)), 'Calculation error: the expression is too long (100000 characters; at most 999)')
  t.match(calculate('('.repeat(450) + ')'.repeat(450)), /^Calculation error: the expression is nested too deeply/)

  // DECISIONS 24: 1,000 characters or more is a calculation error; 999 are evaluated.
  const atLimit = '1+'.repeat(498) + '111'
  t.equal(atLimit.length, MAX_EXPRESSION_LENGTH)
  t.equal(MAX_EXPRESSION_LENGTH, 999)
  t.equal(calculate(atLimit), '609')
  t.match(calculate(atLimit + ' '), /^Calculation error: the expression is too long \(1000 characters/)
  t.ok(Date.now() - started < 2000, 'all limits answered quickly')
})

test('findArithmeticExpression extracts expressions from text', async (t) => {
  t.equal(findArithmeticExpression('what is 2+3*4?'), '2+3*4')
  t.equal(findArithmeticExpression('compute (1.5 + 2) ^ 2 please'), '(1.5 + 2) ^ 2')
  t.equal(findArithmeticExpression('Calculate 2 ** 10.'), '2 ** 10')
  t.equal(findArithmeticExpression('(e.g. 10 / 4)'), '10 / 4')
  t.equal(findArithmeticExpression('is ((1+2)*3 right'), '(1+2)*3')
  t.equal(findArithmeticExpression('and -3 * -2 = 6'), '-3 * -2')
  t.equal(findArithmeticExpression('first 2+2, then 3*3'), '2+2')
  t.equal(findArithmeticExpression('2 3+4'), '3+4')
  t.equal(findArithmeticExpression('1+2*(3'), '1+2')
  t.equal(findArithmeticExpression('2.5e3 - 1'), '2.5e3 - 1')
  t.equal(findArithmeticExpression('x (7)-(2)'), '(7)-(2)')
})

test('findArithmeticExpression needs a binary operator between numbers', async (t) => {
  t.equal(findArithmeticExpression('I have 3 cats'), null)
  t.equal(findArithmeticExpression('what is -5?'), null)
  t.equal(findArithmeticExpression('(42)'), null)
  t.equal(findArithmeticExpression('hello world'), null)
  t.equal(findArithmeticExpression(''), null)
  t.equal(findArithmeticExpression('a well-known + sign'), null)
  t.equal(findArithmeticExpression('H2O + CO2'), null)
  t.equal(findArithmeticExpression('2 plus 3'), null)
  t.equal(findArithmeticExpression('version 1.2.3'), null)
  t.equal(findArithmeticExpression(undefined as unknown as string), null)
})

test('findArithmeticExpression results evaluate', async (t) => {
  const found = findArithmeticExpression('compute (1.5 + 2) ^ 2 please')
  t.equal(found === null ? null : calculate(found), '12.25')
  const division = findArithmeticExpression('what is 1/0?')
  t.equal(division, '1/0')
  t.equal(calculate(division ?? ''), 'Calculation error: division by zero')
})

test('findArithmeticExpression is linear on 100,000-character input', async (t) => {
  const started = Date.now()
  t.equal(findArithmeticExpression('1 '.repeat(50_000)), null)
  t.equal(findArithmeticExpression('('.repeat(100_000)), null)
  t.equal(findArithmeticExpression('-'.repeat(100_000)), null)
  t.equal(findArithmeticExpression('1.'.repeat(50_000)), null)
  t.equal(findArithmeticExpression('a'.repeat(99_990) + ' what is 2+2'), '2+2')
  t.equal(findArithmeticExpression('(1 '.repeat(33_333) + '2+3'), '2+3')
  t.equal(findArithmeticExpression('('.repeat(50_000) + '1+1' + ')'.repeat(49_999)), '('.repeat(49_999) + '1+1' + ')'.repeat(49_999))
  const sum = '1+'.repeat(50_000) + '1'
  t.equal(findArithmeticExpression(sum), sum)
  t.match(calculate(sum), /^Calculation error: the expression is too long/)
  t.ok(Date.now() - started < 3000, `finished in ${Date.now() - started} ms`)
})

test('hostile inputs all end in a clean calculation error', async (t) => {
  const inputs = [
    'constructor',
    '__proto__',
    'process.exit()',
    'this.constructor.constructor("return process")()',
    'require("child_process")',
    'globalThis',
    '1; 2',
    '`1` + 1',
    '2 // 3',
    '1 + /* */ 2',
    '0x10',
    '9^9^9^9',
    '('.repeat(10_000) + '1' + ')'.repeat(10_000),
    ')'.repeat(500),
    '9'.repeat(100_000),
    ' '.repeat(1001),
  ]
  for (const input of inputs) {
    const result = calculate(input)
    t.ok(isCalcError(result), `${input.slice(0, 30)} -> ${result.slice(0, 80)}`)
  }
})
