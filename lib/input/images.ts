// Image input for /api/v2/chat: base64 or data: URLs, type sniffed from the bytes, size-checked.
import type { ImageBlock, ImageMediaType } from '../domain/types.js'
import type { ValidationIssue } from './validation.js'

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/
const DATA_URL = /^data:([\w.+-]+\/[\w.+-]+)?(;[\w-]+=[\w.-]+)*;base64,/i

/** Identifies png, jpeg, gif and webp by their first bytes. */
export function sniffImageType (bytes: Buffer): ImageMediaType | null {
  if (bytes.length >= 8 && bytes.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]))) return 'image/png'
  if (bytes.length >= 3 && bytes[0] === 0xff && bytes[1] === 0xd8 && bytes[2] === 0xff) return 'image/jpeg'
  const head = bytes.subarray(0, 12).toString('latin1')
  if (head.startsWith('GIF87a') || head.startsWith('GIF89a')) return 'image/gif'
  if (head.startsWith('RIFF') && head.slice(8, 12) === 'WEBP') return 'image/webp'
  return null
}

export type ImageParse = { ok: true, block: ImageBlock } | { ok: false, issue: ValidationIssue }

/** Decodes one image string; `index` places the issue at `body.images[index]`. */
export function parseImage (input: string, index: number, maxBytes: number): ImageParse {
  const fail = (msg: string, type: string): ImageParse => ({ ok: false, issue: { loc: ['body', 'images', index], msg, type } })
  const prefix = DATA_URL.exec(input)
  const data = (prefix ? input.slice(prefix[0].length) : input).replace(/\s+/g, '')
  if (data.length === 0 || data.length % 4 !== 0 || !BASE64.test(data)) {
    return fail('Image is not valid base64', 'image_base64')
  }
  const padding = data.endsWith('==') ? 2 : data.endsWith('=') ? 1 : 0
  const size = (data.length / 4) * 3 - padding
  if (size > maxBytes) return fail(`Image is larger than ${maxBytes} bytes`, 'image_too_large')
  const mediaType = sniffImageType(Buffer.from(data.slice(0, 24), 'base64'))
  if (mediaType === null) return fail('Image type not supported: png, jpeg, gif or webp expected', 'image_type')
  return { ok: true, block: { type: 'image', source: { type: 'base64', media_type: mediaType, data } } }
}
