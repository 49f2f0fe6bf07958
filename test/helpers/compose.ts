// compose.yaml as a user runs it: in a copy of the checkout's deployment files with the `.env` the quick start makes.
import { copyFileSync, cpSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { Test } from 'tap'

const root = fileURLToPath(new URL('../../', import.meta.url))

/** A directory holding compose.yaml, deploy/, settings/ and `.env` copied from `.env.example` (compose's env_file needs it). */
export function composeDir (t: Test): string {
  const dir = mkdtempSync(join(tmpdir(), 'compose-'))
  t.teardown(() => { rmSync(dir, { recursive: true, force: true }) })
  copyFileSync(join(root, 'compose.yaml'), join(dir, 'compose.yaml'))
  copyFileSync(join(root, '.env.example'), join(dir, '.env'))
  cpSync(join(root, 'deploy'), join(dir, 'deploy'), { recursive: true })
  cpSync(join(root, 'settings'), join(dir, 'settings'), { recursive: true })
  return dir
}
