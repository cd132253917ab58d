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
  "image.built",
  "image.removed",
] as const;
