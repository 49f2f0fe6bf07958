// Which resumable stream a UI chat is running (README "Chat UIs"): chat id to stream id, per owner, in process or in Redis.

/**
 * The latest stream of each UI chat, so the reconnect route (`GET /api/v1/ui/chat/{id}/stream`) finds it.
 * Keyed by owner (caller identity) and chat id: another owner's chat of the same id is another chat.
 * Entries expire after `ttlSeconds` (the stream's own replay window). A Redis-backed index rejects
 * promptly when Redis is unreachable.
 */
export interface ChatStreamIndex {
  /** Records `streamId` as the chat's latest stream (replacing an earlier one). */
  set (owner: string, chatId: string, streamId: string): Promise<void>
  /** The chat's latest stream id, or null when none is recorded (or it expired). */
  get (owner: string, chatId: string): Promise<string | null>
  close (): Promise<void>
}
