# Agent Chat API: multi-stage build on the current Node LTS (24), production dependencies only, no test code, non-root.
FROM node:24-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY app.ts server.ts ./
COPY lib ./lib
COPY plugins ./plugins
COPY routes ./routes
COPY schemas ./schemas
COPY scripts ./scripts
# Type-checked, then bundled (scripts/bundle.mjs): the image takes only the bundle.
RUN npm run build

FROM node:24-bookworm-slim AS deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund

FROM node:24-bookworm-slim
ENV NODE_ENV=production HOST=0.0.0.0 PORT=8000
WORKDIR /app
COPY --from=deps --chown=node:node /app/node_modules ./node_modules
COPY --from=build --chown=node:node /app/dist/bundle ./dist/bundle
COPY --chown=node:node public ./public
COPY --chown=node:node package.json ./
USER node
EXPOSE 8000
HEALTHCHECK --interval=30s --timeout=10s --retries=3 --start-period=5s \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.PORT||8000)+'/health').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
STOPSIGNAL SIGTERM
CMD ["node", "dist/bundle/server.js"]
