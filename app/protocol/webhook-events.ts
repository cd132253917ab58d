// Apart from the zod schemas of api-webhook.ts: the console's webhook forms list these kinds in the
// browser, and a page that imported the schemas shipped zod, whose first schema probes
// `new Function` (a CSP violation the page's script policy reports: docs/decisions/0033).

/** The event kinds of seed 000 ("Events") a webhook may subscribe to; "*" is every kind. */
export const WEBHOOK_EVENT_KINDS = [
  "box.created",
  "box.ready",
  "box.paused",
  "box.stopped",
  "box.removed",
  "box.unreachable",
  "box.failed",
  "screen.taken_over",
  "screen.given_back",
  // Not in the seed: a screen's browser quit and the box started it again (or, after too many
  // quits in a minute, will after a pause): its tabs are gone (app/models/browser-restarts.server.ts).
  "screen.browser_restarted",
  "screen.browser_paused",
  "image.built",
  "image.removed",
] as const;
