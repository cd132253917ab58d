import { PassThrough } from "node:stream";

// The server bundle carries the realtime setup too, so the process holds one copy of the domain
// (one takeover registry, one batch lock): server.ts takes `holm` from `build.entry.module`.
export { holm } from "../server/holm.server";

import type { AppLoadContext, EntryContext } from "react-router";
import { createReadableStreamFromReadable } from "@react-router/node";
import { ServerRouter, isRouteErrorResponse } from "react-router";
import { isbot } from "isbot";
import type { RenderToPipeableStreamOptions } from "react-dom/server";
import { renderToPipeableStream } from "react-dom/server";
import { type RequestNote, failureOf, log } from "~/utils/log.server";
import { NonceContext } from "~/components/nonce";

export const streamTimeout = 5_000;

/**
 * React Router's own errors go to the server's log, not to stderr: a path no route matches (404)
 * or a method none answers (405) is the person's answer (the not-found page), not the server's
 * fault, and a request whose client went away is nobody's.
 */
export function handleError(error: unknown, { request, context }: { request: Request; context?: unknown }): void {
  if (request.signal.aborted) return;
  const status = isRouteErrorResponse(error) ? error.status : 500;
  if (status === 404 || status === 405) return;
  const inner = isRouteErrorResponse(error) && (error as { error?: unknown }).error ? (error as { error?: unknown }).error : error;
  log.error({ err: inner, status, method: request.method }, "a console request failed");
  // The request's own line (which names the route and the box) says what failed too.
  const note = (context as { note?: RequestNote } | undefined)?.note;
  if (note && status >= 500) note.error = failureOf(inner);
}

export default function handleRequest(
  request: Request,
  responseStatusCode: number,
  responseHeaders: Headers,
  routerContext: EntryContext,
  loadContext: AppLoadContext,
  // If you have middleware enabled:
  // loadContext: RouterContextProvider
) {
  // https://httpwg.org/specs/rfc9110.html#HEAD
  if (request.method.toUpperCase() === "HEAD") {
    return new Response(null, {
      status: responseStatusCode,
      headers: responseHeaders,
    });
  }

  return new Promise((resolve, reject) => {
    let shellRendered = false;
    let userAgent = request.headers.get("user-agent");

    // Ensure requests from bots and SPA Mode renders wait for all content to load before responding
    // https://react.dev/reference/react-dom/server/renderToPipeableStream#waiting-for-all-content-to-load-for-crawlers-and-static-generation
    let readyOption: keyof RenderToPipeableStreamOptions =
      (userAgent && isbot(userAgent)) || routerContext.isSpaMode
        ? "onAllReady"
        : "onShellReady";

    // Abort the rendering stream after the `streamTimeout` so it has time to
    // flush down the rejected boundaries
    let timeoutId: ReturnType<typeof setTimeout> | undefined = setTimeout(
      () => abort(),
      streamTimeout + 1000,
    );

    // The page's script nonce (server/page-csp.ts, by way of server.ts): on every script the render
    // writes, React's own streaming scripts and React Router's (<Scripts>, <ScrollRestoration>,
    // module preloads), and ours in the root's <head> (NonceContext). A render without one (no
    // policy to satisfy) writes none.
    const nonce = (loadContext as { cspNonce?: string } | undefined)?.cspNonce;
    const { pipe, abort } = renderToPipeableStream(
      <NonceContext value={nonce}>
        <ServerRouter context={routerContext} url={request.url} nonce={nonce} />
      </NonceContext>,
      {
        nonce,
        [readyOption]() {
          shellRendered = true;
          const body = new PassThrough({
            final(callback) {
              // Clear the timeout to prevent retaining the closure and memory leak
              clearTimeout(timeoutId);
              timeoutId = undefined;
              callback();
            },
          });
          const stream = createReadableStreamFromReadable(body);

          responseHeaders.set("Content-Type", "text/html");

          pipe(body);

          resolve(
            new Response(stream, {
              headers: responseHeaders,
              status: responseStatusCode,
            }),
          );
        },
        onShellError(error: unknown) {
          reject(error);
        },
        onError(error: unknown) {
          responseStatusCode = 500;
          // Log streaming rendering errors from inside the shell.  Don't log
          // errors encountered during initial shell rendering since they'll
          // reject and get logged in handleDocumentRequest.
          if (shellRendered) {
            log.error({ err: error }, "rendering a page failed");
          }
        },
      },
    );
  });
}
