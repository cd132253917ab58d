import type { CdpClaims } from "~/models/cdp-token.server";
import { ApiError } from "~/utils/api-error.server";
import { env } from "~/utils/env.server";

// What CDP sockets may cost this server (docs/decisions/0011-cdp-proxy.md, "Limits"). Each socket
// may hold up to HIGH_WATER (server/cdp-socket.ts) waiting each way plus one message being read
// whole each way, and nothing bounded how many one key opened: four sockets asking Chromium for
// 120 MB answers grew the server by 574 MiB. So sockets are counted (in this process, as the
// viewer relay counts its own: server/viewer-socket.ts) per screen, per issuer on a screen (half
// a screen's places, so one key or person cannot take them all) and per issuer across every box;
// and one message is bounded each way.

/**
 * The largest message each way, in bytes (HOLM_CDP_MESSAGE_MIB, 32 MiB by default; Chromium's own
 * bounds are 100 MB from a client and 256 MB to one). ws refuses a longer one from its frame
 * header, before holding any of it, and closes 1009. What clients need fits: a 1280×800 PNG
 * screenshot is a few MB in base64; Playwright and Puppeteer fetch PDFs and traces in chunks
 * (`transferMode: "ReturnAsStream"`, then `IO.read`). What does not: an evaluation returning a
 * string over the bound, a full-page screenshot of a very long page, and Playwright's
 * setInputFiles of files over ~24 MB (sent inline in base64 to a remote browser).
 */
export function cdpMessageMax(): number {
  return env().HOLM_CDP_MESSAGE_MIB * 1024 * 1024;
}

/**
 * What every CDP socket of this process together may hold waiting to be written, both ways, in
 * bytes (HOLM_CDP_BUFFER_MIB, 256 MiB by default). Each socket stops reading one side while the
 * other has more than 8 MiB waiting (server/cdp-socket.ts), so one socket holds at most that
 * plus one message, 40 MiB with the default bound; but the counts above let many keys open
 * many sockets, and they added up (twelve sockets writing to a paused box grew the server by 92
 * MiB; six reading none of their answers, by 65 MiB in 25 s and rising, as fast as the box's
 * browser answered: tests/integration/cdp-budget). Past the budget the socket furthest behind
 * (its oldest write waiting longest, whichever socket's write crossed the line) is closed, with 1013
 * "try again later": the condition is the server's, shared with every other socket, and passes,
 * unlike 1008, which says this client's access ended and connecting again will not help.
 */
export function cdpBufferMax(): number {
  return env().HOLM_CDP_BUFFER_MIB * 1024 * 1024;
}

const open = new Map<string, number>();

/**
 * Takes a place for one socket of `claims`' issuer on its screen: the function that gives it back
 * (idempotent), or the refusal, `503 unavailable` (retryable once a socket closes), the viewer
 * relay's answer past its own bounds.
 */
export function reserveCdpPlace(claims: Pick<CdpClaims, "box_id" | "screen" | "issuer">): (() => void) | ApiError {
  const { HOLM_CDP_SOCKETS_PER_SCREEN: perScreen, HOLM_CDP_SOCKETS_PER_ISSUER: perIssuer } = env();
  const where = `screen ${claims.screen} of box ${claims.box_id}`;
  const screenKey = `screen:${claims.box_id}:${claims.screen}`;
  const mineKey = `${screenKey}:${claims.issuer}`;
  const issuerKey = `issuer:${claims.issuer}`;
  const onScreen = open.get(screenKey) ?? 0;
  const mine = open.get(mineKey) ?? 0;
  const byIssuer = open.get(issuerKey) ?? 0;
  const why =
    onScreen >= perScreen
      ? `${where} has ${onScreen} CDP sockets open, the most it takes (HOLM_CDP_SOCKETS_PER_SCREEN)`
      : mine >= Math.max(1, Math.floor(perScreen / 2))
        ? `this issuer already has ${mine} CDP sockets open on ${where}, the most one issuer may have on a screen`
        : byIssuer >= perIssuer
          ? `this issuer already has ${byIssuer} CDP sockets open on this server, the most one issuer may have (HOLM_CDP_SOCKETS_PER_ISSUER)`
          : undefined;
  if (why) return new ApiError("unavailable", `${why}; close one and try again (one connectOverCDP uses one)`, { retryable: true });
  const keys = [screenKey, mineKey, issuerKey];
  for (const k of keys) open.set(k, (open.get(k) ?? 0) + 1);
  let released = false;
  return () => {
    if (released) return;
    released = true;
    for (const k of keys) {
      const n = (open.get(k) ?? 1) - 1;
      if (n > 0) open.set(k, n);
      else open.delete(k);
    }
  };
}
