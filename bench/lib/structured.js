// The schemas of the structured-output rows (issue 42 item 4): the features row's (one string, what the bench fake
// answers with its words) and a typical client schema for the check's own cost (bench/structured-check.js).

/** The features row's `response_format` schema: an object with one required string. */
export const REPLY_SCHEMA = { type: 'object', properties: { text: { type: 'string' } }, required: ['text'], additionalProperties: false }

/** A schema as a client's zod object gives it (nested objects, an enum, a pattern, a format, bounds), and an answer it accepts. */
export const TYPICAL = {
  schema: {
    type: 'object',
    properties: {
      city: { type: 'string', minLength: 1 },
      country: { type: 'string', pattern: '^[A-Z]{2}$' },
      temperature: { type: 'number', minimum: -100, maximum: 100 },
      unit: { type: 'string', enum: ['celsius', 'fahrenheit'] },
      observed_at: { type: 'string', format: 'date-time' },
      conditions: {
        type: 'array',
        minItems: 1,
        maxItems: 10,
        items: {
          type: 'object',
          properties: { kind: { type: 'string', enum: ['rain', 'sun', 'wind', 'snow'] }, note: { type: 'string' } },
          required: ['kind', 'note'],
          additionalProperties: false,
        },
      },
      tags: { type: 'array', items: { type: 'string' }, maxItems: 20 },
    },
    required: ['city', 'country', 'temperature', 'unit', 'observed_at', 'conditions', 'tags'],
    additionalProperties: false,
  },
  answer: JSON.stringify({
    city: 'Paris',
    country: 'FR',
    temperature: 18.5,
    unit: 'celsius',
    observed_at: '2026-11-28T12:00:00Z',
    conditions: [{ kind: 'rain', note: 'light showers in the morning' }, { kind: 'wind', note: 'gusts up to 40 km/h' }],
    tags: ['autumn', 'mild', 'wet'],
  }),
}

/** The bench fake's reply text: `tokens` words (`token token …`), one per stream delta. */
export const replyWords = (tokens) => Array.from({ length: tokens }, (_, i) => (i === 0 ? 'token' : ' token')).join('')
