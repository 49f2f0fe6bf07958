// Body limit of the /v1 routes that take images: 20 MB, as OpenAI's.
export const OPENAI_BODY_LIMIT = 20 * 1024 * 1024
