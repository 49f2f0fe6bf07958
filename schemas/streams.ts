// Schemas of the resumable stream routes (README "Resumable streams"): resume and cancel.
import { Type, type Static } from 'typebox'

export const StreamParams = Type.Object({
  id: Type.String({ minLength: 1, maxLength: 64, pattern: '^[A-Za-z0-9-]+$', description: 'Stream id, from the `X-Stream-Id` header of the stream' }),
})

export const ResumeQuery = Type.Object({
  last_event_id: Type.Optional(Type.String({
    description: 'Replay after this event id (the `id:` of the last event received); the `Last-Event-ID` header wins when both are given',
  })),
})

export const ResumeHeaders = Type.Object({
  'last-event-id': Type.Optional(Type.String({ description: 'Replay after this event id, as EventSource sends it on reconnect' })),
})

export const CancelAccepted = Type.Object({
  detail: Type.String({ description: '`Cancelling`: the run stops; the stream ends with the layout\'s `Cancelled` error message' }),
}, { description: 'Cancel accepted' })

export type StreamParamsType = Static<typeof StreamParams>
