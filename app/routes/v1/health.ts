import { v1 } from "~/edge/route.server";
import { readiness } from "~/models/readiness.server";

// GET /v1/health: the seed's liveness answer, unchanged. GET /v1/health?ready=1: readiness (the
// store, the engine, the default box image; app/models/readiness.server.ts), 200 with each
// check, or 503 `unavailable` (retryable) naming what failed, with the same checks. No token:
// probes (a load balancer, Kubernetes, systemd) call it, and it tells nothing of boxes.
// The one route whose query is not strict: a probe may add a cache-buster (`?_=123`), and the
// seed's liveness answer is always {"ok":true}. Only `ready` means anything.

const route = v1({
  GET: async ({ request }) => {
    const ready = new URL(request.url).searchParams.get("ready");
    if (ready !== "1" && ready !== "true") return { ok: true, service: "holm-server" };
    const r = await readiness();
    const failed = Object.entries(r.checks).filter(([, c]) => !c.ok);
    if (r.ready) return { ok: true, service: "holm-server", ready: true, checks: r.checks };
    const message = `not ready: ${failed.map(([name, c]) => `${name}: ${c.error}`).join("; ")}`;
    return Response.json({ code: "unavailable", message, retryable: true, ready: false, checks: r.checks }, { status: 503 });
  },
});

export const loader = route.loader, action = route.action;
