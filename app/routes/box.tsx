import { useCallback, useEffect, useMemo, useRef, useState } from "react";
import { Form, Link, data, useFetcher, useNavigation, useRevalidator } from "react-router";
import { io } from "socket.io-client";
import type { Route } from "./+types/box";
import { CopyButton } from "~/components/copy-button";
import { Shell } from "~/components/shell";
import { BoxTerminal } from "~/components/terminal";
import { Alert, CsrfInput, duration, when } from "~/components/ui";
import { BoxNotice } from "~/components/box-notice";
import { VncViewer, type ViewerStatus } from "~/components/vnc-viewer";
import { type BoxJson, getBox } from "~/models/box.server";
import { callAgent, requireScreen } from "~/models/screen.server";
import { assertMayDrive, giveBack, takeOver } from "~/models/takeover.server";
import { recordEntry } from "~/models/trace.server";
import { ApiError, isApiError } from "~/utils/api-error.server";
import { lifecycleIntent } from "~/edge/box-actions.server";
import { requireCsrf, requireWorkspace } from "~/edge/console.server";
import { field, formAction } from "~/edge/form.server";
import { type ScreenStatus, screenStatus } from "~/models/screen-status.server";

// The console page of one box: the live screen (noVNC), who watches and who drives, take over
// and give back, the clipboard while in control, a terminal, the box's facts and its lifecycle
// actions. Live counters and the control banner come over socket.io (`screens` on /boxes).

export const meta: Route.MetaFunction = ({ data }) => [
  { title: `${data && "box" in data && data.box ? data.box.id.slice(0, 16) + "…" : "Box"} · holm` },
];

function screenParam(request: Request, screens: number): number {
  const raw = new URL(request.url).searchParams.get("screen") ?? "0";
  const n = /^[0-9]{1,2}$/.test(raw) ? Number(raw) : 0;
  return n < screens ? n : 0;
}

export async function loader({ request, params }: Route.LoaderArgs) {
  const ctx = await requireWorkspace(request);
  const common = {
    me: `user:${ctx.user.id}`,
    role: ctx.workspace.role,
    workspace: { id: ctx.workspace.id, name: ctx.workspace.name },
    csrf: ctx.csrf,
    now: Date.now(),
  };
  let box: BoxJson;
  try {
    box = await getBox(ctx.actor, params.id);
  } catch (e) {
    if (isApiError(e) && e.code === "gone") {
      return { ...common, box: null, removed: { id: params.id, why: e.message } };
    }
    if (isApiError(e) && e.code === "not_found") throw data("There is no such box in this workspace.", { status: 404 });
    throw e;
  }
  const screens = await Promise.all(Array.from({ length: box.screens }, (_, n) => screenStatus(box.id, n)));
  // A viewer URL names the desktop it was made for (`desktop=`); without one, the current one.
  const desktop = new URL(request.url).searchParams.get("desktop");
  return { ...common, box, removed: null, screen: screenParam(request, box.screens), screens, desktop };
}

export async function action({ request, params }: Route.ActionArgs) {
  return formAction(async () => {
    const ctx = await requireWorkspace(request, "member");
    const form = await request.formData();
    requireCsrf(form, ctx);
    const id = params.id;
    const screenOf = async () => {
      // A paused box would make requireScreen wait for it; say so instead.
      const box = await getBox(ctx.actor, id);
      if (box.state !== "ready") throw new ApiError("denied", `the box is ${box.state}; resume it first`);
      return requireScreen(ctx.actor, id, field(form, "screen") || "0", request.signal);
    };
    switch (field(form, "intent")) {
      case "takeover": {
        const t = await takeOver(ctx.actor, await screenOf(), { shared: form.get("shared") === "on" });
        return { ok: t.exclusive ? "You have control. The agent's input waits until you give it back." : "You have control, shared with the agent." };
      }
      case "giveback": {
        const r = await giveBack(ctx.actor, await screenOf());
        return { ok: r.given_back ? "Given back to the agent." : "Nobody had control of this screen." };
      }
      case "clipboard": {
        // Through the agent, as PUT /v1/…/clipboard does (see vnc-viewer.tsx for why not VNC).
        const text = field(form, "text");
        if (text.length > 1_000_000) throw new ApiError("bad_request", "the text is longer than 1,000,000 characters");
        const t = await screenOf();
        assertMayDrive(ctx.actor, t.box.id, t.screen, "sending text to its clipboard");
        await callAgent(t.box, "PUT", `/screens/${t.screen}/clipboard`, { text, selection: "clipboard" });
        await recordEntry(t.box.id, {
          actor: "person",
          event: "person_input",
          screen: t.screen,
          data: { kind: "clipboard", bytes: Buffer.byteLength(text), by: `user:${ctx.user.id}` },
        }).catch((err) => console.error("[holm] trace clipboard failed:", err));
        return { clipboard: "Sent: paste it in the box with Ctrl+V." };
      }
      default: {
        const done = await lifecycleIntent(ctx.actor, field(form, "intent"), id);
        if (!done) throw new ApiError("bad_request", "unknown action");
        return done;
      }
    }
  });
}

type ActionResult = { ok: string } | { error: string } | { clipboard: string };

const STATE_STYLE: Record<string, string> = {
  ready: "bg-emerald-100 text-emerald-800 ring-emerald-200",
  starting: "bg-amber-100 text-amber-800 ring-amber-200",
  paused: "bg-sky-100 text-sky-800 ring-sky-200",
  stopped: "bg-slate-200 text-slate-700 ring-slate-300",
  unreachable: "bg-orange-100 text-orange-800 ring-orange-200",
  failed: "bg-red-100 text-red-800 ring-red-200",
  gone: "bg-slate-100 text-slate-500 ring-slate-200",
};

function StatePill({ state, reason }: { state: string; reason?: string }) {
  return (
    <span
      data-testid="box-state"
      title={reason}
      className={`inline-flex items-center gap-1 rounded-full px-2.5 py-0.5 text-xs font-medium ring-1 ring-inset ${STATE_STYLE[state] ?? ""}`}
    >
      <span aria-hidden className={`h-1.5 w-1.5 rounded-full ${state === "ready" ? "bg-emerald-500" : "bg-current opacity-60"}`} />
      {state}
    </span>
  );
}

/** Re-renders every few seconds so ages and deadlines stay true; starts at the server's clock so hydration matches. */
function useNow(everyMs: number, initial: number) {
  const [now, setNow] = useState(initial);
  useEffect(() => {
    setNow(Date.now());
    const t = setInterval(() => setNow(Date.now()), everyMs);
    return () => clearInterval(t);
  }, [everyMs]);
  return now;
}

/** The box and its screens, kept current by the server's pushes; the loader paints first. */
function useLiveBox(initial: BoxJson, initialScreens: ScreenStatus[], workspace: string) {
  const [box, setBox] = useState(initial);
  const [screens, setScreens] = useState(initialScreens);
  const [live, setLive] = useState(false);
  const revalidator = useRevalidator();
  const revalidate = useRef(revalidator.revalidate);
  revalidate.current = revalidator.revalidate;
  useEffect(() => setBox(initial), [initial]);
  // Keep whichever status of each screen is newest (loader data and pushes may cross).
  const merge = useCallback((incoming: ScreenStatus) => {
    setScreens((prev) => {
      const cur = prev[incoming.screen];
      if (cur && cur.seq > incoming.seq) return prev;
      const next = prev.slice();
      next[incoming.screen] = incoming;
      return next;
    });
  }, []);
  useEffect(() => {
    for (const s of initialScreens) merge(s);
  }, [initialScreens, merge]);
  useEffect(() => {
    const socket = io("/boxes", { transports: ["websocket"], auth: { workspace } });
    let first = true;
    socket.on("connect", () => {
      setLive(true);
      // After a drop, what was missed comes from the loader.
      if (!first) void revalidate.current();
      first = false;
    });
    socket.on("disconnect", () => setLive(false));
    socket.on("box", (b: BoxJson) => {
      if (b.id !== initial.id) return;
      if (b.state === "gone") void revalidate.current();
      else setBox(b);
    });
    socket.on("screens", (s: ScreenStatus) => {
      if (s.box_id === initial.id) merge(s);
    });
    return () => {
      socket.close();
    };
  }, [workspace, initial.id, merge]);
  return { box, screens, live };
}

function controlOf(s: ScreenStatus | undefined, me: string, canDrive: boolean) {
  const t = s?.takeover ?? null;
  // A takeover through an API key or the server token hands the screen to the people here.
  const handedOver = !!t && !t.by.startsWith("user:");
  const mine = !!t && (t.by === me || (handedOver && canDrive));
  let banner: string;
  if (!t) banner = "The agent has control";
  else if (mine) banner = "You have control";
  else if (handedOver) banner = "A person has control";
  else banner = `${t.by_name ?? "Another person"} has control`;
  let detail = "";
  if (t && !t.exclusive) detail = "Shared: the agent can still act.";
  else if (t && mine && handedOver) detail = "The agent handed this screen over through the API.";
  else if (t && !mine) detail = "The agent's input waits until the screen is given back.";
  return { t, mine, banner, detail, blockedByOther: !!t && !mine && t.exclusive };
}

export default function BoxPage({ loaderData, actionData }: Route.ComponentProps) {
  if (!loaderData.box) return <Removed id={loaderData.removed!.id} why={loaderData.removed!.why} />;
  return <LiveBox loaderData={loaderData as Loaded} actionData={actionData as ActionResult | undefined} />;
}

type Loaded = Extract<Route.ComponentProps["loaderData"], { removed: null }>;

function Removed({ id, why }: { id: string; why: string }) {
  return (
    <BoxNotice
      id={id}
      title="This box was removed"
      links={[
        { to: `/boxes/${id}/trace`, label: "See its trace" },
        { to: "/", label: "Back to boxes" },
      ]}
    >
      <p>{why}</p>
      <p>Its files are gone; its history stays.</p>
    </BoxNotice>
  );
}

/** The desktop a viewer URL names (`desktop=`): it changes when a stopped box resumes. */
const desktopIn = (url: string) => new URL(url).searchParams.get("desktop");

/**
 * The page was opened for a desktop the box no longer runs (it was stopped and resumed): say so,
 * with the way to the current one, rather than show the new desktop as if it were the same.
 */
function StaleDesktop({ box, screen }: { box: BoxJson; screen: number }) {
  const current = new URL(box.viewer_urls[screen] ?? box.viewer_url).search;
  return (
    <BoxNotice
      id={box.id}
      title="This desktop was restarted"
      links={[
        { to: `/boxes/${box.id}${current}`, label: "Open the current desktop" },
        { to: `/boxes/${box.id}/trace`, label: "See its trace" },
      ]}
    >
      <p>The box was stopped and resumed since this link was made, so it runs a new desktop: nothing that was open on the old one is there.</p>
    </BoxNotice>
  );
}

function LiveBox({ loaderData, actionData }: { loaderData: Loaded; actionData: ActionResult | undefined }) {
  const { me, role, workspace, csrf, screen } = loaderData;
  const { box, screens, live } = useLiveBox(loaderData.box, loaderData.screens, workspace.id);
  const canDrive = role !== "viewer";
  const status = screens[screen];
  const control = controlOf(status, me, canDrive);
  const mode = control.mine && canDrive ? "control" : "view";
  const now = useNow(5000, loaderData.now);
  const [viewer, setViewer] = useState<ViewerStatus>({ kind: "connecting" });
  const [boxClipboard, setBoxClipboard] = useState<string | null>(null);
  const fetcher = useFetcher<ActionResult>();
  // Take over and give back speak through the banner; only their refusals show here.
  const refused = fetcher.state === "idle" && fetcher.data && "error" in fetcher.data ? fetcher.data.error : null;
  const result = actionData;
  const busy = fetcher.state !== "idle";
  const ready = box.state === "ready";
  const label = `Screen ${screen} of box ${box.id}`;

  // Checked on the live box too: a resume while the page is open shows the notice then.
  if (loaderData.desktop !== null && loaderData.desktop !== desktopIn(box.viewer_url)) return <StaleDesktop box={box} screen={screen} />;
  return (
    <Shell>
      <div className="flex flex-wrap items-start justify-between gap-4">
        <div className="min-w-0">
          <nav aria-label="Breadcrumb" className="text-sm text-slate-500">
            <Link to="/" className="hover:underline">Boxes</Link> / <span className="font-mono">{box.id.slice(0, 16)}…</span>
          </nav>
          <h1 className="mt-1 flex flex-wrap items-center gap-3 text-2xl font-semibold tracking-tight">
            <span className="truncate font-mono text-xl">{box.id}</span>
            <StatePill state={box.state} reason={box.reason} />
          </h1>
          <p className="mt-1 text-sm text-slate-600">
            {box.width}×{box.height}
            {box.screens > 1 ? ` · ${box.screens} screens` : ""} · expires in {duration(box.expires_at_ms - now)} ·{" "}
            <span className={live ? "text-emerald-700" : "text-slate-500"}>{live ? "● live" : "○ connecting…"}</span>
          </p>
        </div>
      </div>

      <div className="mt-6 grid gap-6 lg:grid-cols-[minmax(0,1fr)_18rem]">
        <div className="min-w-0 space-y-4">
          {refused ? <Alert>{refused}</Alert> : null}
          {result && "error" in result ? <Alert>{result.error}</Alert> : null}
          {result && "ok" in result ? <Alert tone="success">{result.ok}</Alert> : null}

          {/* Who has control, and who is here. */}
          <div
            className={`flex flex-wrap items-center justify-between gap-3 rounded-xl px-4 py-3 ring-1 ${
              control.mine
                ? "bg-indigo-600 text-white ring-indigo-700"
                : control.t
                  ? "bg-amber-50 text-amber-900 ring-amber-200"
                  : "bg-white text-slate-800 ring-slate-200"
            }`}
          >
            <div role="status" aria-live="polite" aria-atomic="true" data-testid="control-banner">
              <p className="text-sm font-semibold">{control.banner}</p>
              {control.detail ? <p className={`text-xs ${control.mine ? "text-indigo-100" : "opacity-80"}`}>{control.detail}</p> : null}
            </div>
            <div className="flex flex-wrap items-center gap-3">
              <p
                className={`text-xs tabular-nums ${control.mine ? "text-indigo-100" : "text-slate-600"}`}
                aria-live="polite"
                data-testid="screen-counters"
              >
                {status?.watching ?? 0} watching · {status?.driving ?? 0} driving
              </p>
              {canDrive && ready ? (
                control.mine ? (
                  <fetcher.Form method="post">
                    <CsrfInput token={csrf} />
                    <input type="hidden" name="intent" value="giveback" />
                    <input type="hidden" name="screen" value={screen} />
                    <button
                      type="submit"
                      disabled={busy}
                      className="rounded-md bg-white px-3 py-1.5 text-sm font-medium text-indigo-700 shadow-sm hover:bg-indigo-50 disabled:opacity-60"
                    >
                      Give back
                    </button>
                  </fetcher.Form>
                ) : (
                  <fetcher.Form method="post" className="flex items-center gap-3">
                    <CsrfInput token={csrf} />
                    <input type="hidden" name="intent" value="takeover" />
                    <input type="hidden" name="screen" value={screen} />
                    <label className="flex items-center gap-1.5 text-xs">
                      <input type="checkbox" name="shared" disabled={control.blockedByOther} className="rounded" />
                      Shared with the agent
                    </label>
                    <button
                      type="submit"
                      disabled={busy || control.blockedByOther}
                      title={control.blockedByOther ? "Another person has this screen; they give it back first" : undefined}
                      className="rounded-md bg-indigo-600 px-3 py-1.5 text-sm font-medium text-white shadow-sm hover:bg-indigo-500 disabled:cursor-not-allowed disabled:opacity-50"
                    >
                      Take over
                    </button>
                  </fetcher.Form>
                )
              ) : null}
            </div>
          </div>

          {box.screens > 1 ? (
            <nav aria-label="Screens" className="flex flex-wrap gap-1">
              {Array.from({ length: box.screens }, (_, n) => {
                const s = screens[n];
                return (
                  <Link
                    key={n}
                    to={`?screen=${n}`}
                    aria-current={n === screen ? "page" : undefined}
                    className={`rounded-md px-3 py-1.5 text-sm font-medium ${
                      n === screen ? "bg-slate-900 text-white" : "text-slate-700 ring-1 ring-slate-200 hover:bg-slate-100"
                    }`}
                  >
                    Screen {n}
                    {s?.takeover ? <span className="ml-1 text-amber-500" title="A person has control">●</span> : null}
                  </Link>
                );
              })}
            </nav>
          ) : null}

          {/* The screen, in a dark frame. */}
          <div
            className={`overflow-hidden rounded-2xl bg-slate-900 p-1.5 shadow-xl ring-1 ${
              mode === "control" ? "ring-2 ring-indigo-500" : "ring-slate-800"
            }`}
          >
            <div className="flex items-center justify-between px-2 pb-1.5 pt-0.5 text-xs text-slate-400">
              <span>
                Screen {screen}
                {mode === "control" ? " · your keyboard and mouse go to the box: click the screen, then type" : " · watching"}
              </span>
              <ViewerBadge status={viewer} />
            </div>
            <div className="relative">
              {ready ? (
                <VncViewer
                  key={`${box.id}/${screen}`}
                  boxId={box.id}
                  screen={screen}
                  width={box.width}
                  height={box.height}
                  mode={mode}
                  label={label}
                  onStatus={setViewer}
                  onClipboard={setBoxClipboard}
                />
              ) : (
                <div
                  className="grid w-full place-items-center bg-slate-950 text-sm text-slate-400"
                  style={{ aspectRatio: `${box.width} / ${box.height}`, maxHeight: "78vh" }}
                >
                  {box.state === "paused" || box.state === "stopped"
                    ? `The box is ${box.state}. Resume it to see the screen.`
                    : box.state === "starting"
                      ? "The box is starting…"
                      : box.state === "failed"
                        ? `The box failed to start${box.reason ? `: ${box.reason}` : "."}`
                        : `The box is ${box.state}${box.reason ? `: ${box.reason}` : "."}`}
                </div>
              )}
              {ready && viewer.kind !== "connected" ? <ViewerOverlay status={viewer} /> : null}
            </div>
          </div>

          {canDrive && mode === "control" ? (
            <ClipboardPanel csrf={csrf} screen={screen} boxClipboard={boxClipboard} />
          ) : boxClipboard !== null ? (
            <p className="text-xs text-slate-500">
              Box clipboard: <code className="break-all">{boxClipboard.slice(0, 200)}</code>
            </p>
          ) : null}

          {canDrive ? (
            <TerminalPanel boxId={box.id} workspace={workspace.id} ready={ready} />
          ) : null}
        </div>

        <aside className="space-y-4">
          <Details box={box} now={now} workspace={workspace} />
          {canDrive ? <Lifecycle box={box} csrf={csrf} /> : null}
          <Link to={`/boxes/${box.id}/trace`} className="block text-sm font-medium text-indigo-700 hover:underline">
            Trace: what happened in this box →
          </Link>
        </aside>
      </div>
    </Shell>
  );
}

function ViewerBadge({ status }: { status: ViewerStatus }) {
  const text =
    status.kind === "connected"
      ? status.mode === "control"
        ? "● in control"
        : "● live"
      : status.kind === "connecting"
        ? "connecting…"
        : status.kind === "waiting"
          ? "reconnecting…"
          : "ended";
  return (
    <span data-testid="viewer-status" className={`whitespace-nowrap ${status.kind === "connected" ? "text-emerald-400" : "text-amber-300"}`}>
      {text}
    </span>
  );
}

function ViewerOverlay({ status }: { status: ViewerStatus }) {
  const [, tick] = useState(0);
  useEffect(() => {
    if (status.kind !== "waiting") return;
    const t = setInterval(() => tick((n) => n + 1), 250);
    return () => clearInterval(t);
  }, [status]);
  const startedAt = useMemo(() => Date.now(), [status]);
  let text = "Connecting to the screen…";
  if (status.kind === "waiting") {
    const left = Math.max(0, Math.ceil((status.retryInMs - (Date.now() - startedAt)) / 1000));
    text = `Connection lost (${status.why}). Reconnecting${left > 0 ? ` in ${left} s` : ""}…`;
  } else if (status.kind === "ended") text = `The viewer stopped: ${status.why}`;
  return (
    <div className="pointer-events-none absolute inset-0 grid place-items-center bg-slate-950/60 p-4 text-center text-sm text-slate-200">
      <span className="rounded-md bg-slate-900/80 px-3 py-2 ring-1 ring-slate-700">{text}</span>
    </div>
  );
}

function ClipboardPanel({ csrf, screen, boxClipboard }: { csrf: string; screen: number; boxClipboard: string | null }) {
  const fetcher = useFetcher<ActionResult>();
  const [text, setText] = useState("");
  const result = fetcher.data;
  return (
    <section aria-labelledby="clipboard-h" className="rounded-xl border border-slate-200 bg-white p-4 shadow-sm">
      <h2 id="clipboard-h" className="text-sm font-semibold">Clipboard</h2>
      <div className="mt-3 grid gap-4 md:grid-cols-2">
        <fetcher.Form method="post" className="space-y-2">
          <CsrfInput token={csrf} />
          <input type="hidden" name="intent" value="clipboard" />
          <input type="hidden" name="screen" value={screen} />
          <label className="block text-xs font-medium text-slate-700" htmlFor="clip-out">
            Text for the box
          </label>
          <textarea
            id="clip-out"
            name="text"
            value={text}
            onChange={(e) => setText(e.target.value)}
            rows={3}
            className="block w-full rounded-md border border-slate-300 px-2 py-1.5 font-mono text-xs focus:border-indigo-500 focus:outline-none focus:ring-1 focus:ring-indigo-500"
          />
          <div className="flex items-center gap-3">
            <button
              type="submit"
              disabled={text === "" || fetcher.state !== "idle"}
              className="rounded-md bg-white px-3 py-1.5 text-xs font-medium text-slate-800 ring-1 ring-slate-300 hover:bg-slate-50 disabled:opacity-50"
            >
              Send to box clipboard
            </button>
            <span role="status" className={`text-xs ${result && "error" in result ? "text-red-700" : "text-slate-500"}`}>
              {fetcher.state === "idle" && result ? ("error" in result ? result.error : "clipboard" in result ? result.clipboard : "") : ""}
            </span>
          </div>
        </fetcher.Form>
        <div className="space-y-2">
          <div className="flex items-center justify-between">
            <span className="text-xs font-medium text-slate-700" id="clip-in-label">
              The box's clipboard
            </span>
            {boxClipboard ? <CopyButton text={boxClipboard} /> : null}
          </div>
          <pre
            aria-labelledby="clip-in-label"
            data-testid="box-clipboard"
            className="h-[4.75rem] overflow-auto whitespace-pre-wrap break-all rounded-md bg-slate-50 px-2 py-1.5 font-mono text-xs text-slate-700 ring-1 ring-slate-200"
          >
            {boxClipboard ?? "Copy something in the box and it shows here."}
          </pre>
        </div>
      </div>
    </section>
  );
}

function TerminalPanel({ boxId, workspace, ready }: { boxId: string; workspace: string; ready: boolean }) {
  const [open, setOpen] = useState(false);
  return (
    <details
      className="rounded-xl border border-slate-200 bg-white p-4 shadow-sm"
      onToggle={(e) => setOpen(e.currentTarget.open)}
    >
      <summary className="cursor-pointer text-sm font-semibold">Terminal</summary>
      <div className="mt-3">
        {open && ready ? (
          <BoxTerminal boxId={boxId} workspace={workspace} />
        ) : open ? (
          <p className="text-sm text-slate-600">The terminal needs a running box.</p>
        ) : null}
        <p className="mt-2 text-xs text-slate-500">
          A login shell as root in the box. The trace records that a session was opened and closed, not what was typed.
        </p>
      </div>
    </details>
  );
}

function Details({ box, now, workspace }: { box: BoxJson; now: number; workspace: { id: string; name: string } }) {
  const rows: [string, React.ReactNode][] = [
    ["State", <StatePill key="s" state={box.state} reason={box.reason} />],
    ["Size", `${box.width}×${box.height}${box.screens > 1 ? ` · ${box.screens} screens` : ""}`],
    ["Created", <span key="c" title={when(box.created_at_ms)}>{duration(now - box.created_at_ms)} ago</span>],
    ["Expires", <span key="e" title={when(box.expires_at_ms)}>in {duration(box.expires_at_ms - now)}</span>],
    ["Owner", box.owner === workspace.id ? workspace.name : (box.owner ?? "server token")],
    ["Runtime", box.runtime],
    ["Network", box.spec.policy.network ? "on" : "off"],
  ];
  return (
    <section aria-labelledby="details-h" className="rounded-xl border border-slate-200 bg-white p-4 shadow-sm">
      <h2 id="details-h" className="text-sm font-semibold">Details</h2>
      <dl className="mt-3 space-y-2 text-sm">
        {rows.map(([k, v]) => (
          <div key={k} className="flex items-center justify-between gap-3">
            <dt className="text-slate-500">{k}</dt>
            <dd className="text-right tabular-nums text-slate-800">{v}</dd>
          </div>
        ))}
      </dl>
      {box.reason ? <p className="mt-3 text-xs text-slate-500">{box.reason}</p> : null}
      <div className="mt-3 flex items-center justify-between gap-2 border-t border-slate-100 pt-3">
        <code className="truncate font-mono text-xs text-slate-500">{box.id}</code>
        <span className="shrink-0 whitespace-nowrap">
          <CopyButton text={box.id} label="Copy id" />
        </span>
      </div>
    </section>
  );
}

function Lifecycle({ box, csrf }: { box: BoxJson; csrf: string }) {
  const navigation = useNavigation();
  const pending = navigation.state !== "idle" ? navigation.formData?.get("intent") : undefined;
  const act = (intent: string, label: string, opts: { danger?: boolean; confirmText?: string } = {}) => (
    <Form
      method="post"
      onSubmit={(e) => {
        if (opts.confirmText && !confirm(opts.confirmText)) e.preventDefault();
      }}
    >
      <CsrfInput token={csrf} />
      <input type="hidden" name="intent" value={intent} />
      <button
        type="submit"
        disabled={pending !== undefined}
        className={`w-full rounded-md px-3 py-1.5 text-sm font-medium ring-1 disabled:opacity-50 ${
          opts.danger ? "text-red-700 ring-red-200 hover:bg-red-50" : "text-slate-800 ring-slate-300 hover:bg-slate-50"
        }`}
      >
        {pending === intent ? `${label}…` : label}
      </button>
    </Form>
  );
  return (
    <section aria-labelledby="actions-h" className="rounded-xl border border-slate-200 bg-white p-4 shadow-sm">
      <h2 id="actions-h" className="text-sm font-semibold">Actions</h2>
      <div className="mt-3 grid grid-cols-2 gap-2">
        {box.state === "ready" ? act("pause", "Pause") : null}
        {box.state === "paused" || box.state === "stopped" ? act("resume", "Resume") : null}
        {box.state === "ready" || box.state === "paused" ? act("stop", "Stop") : null}
        {act("remove", "Remove", { danger: true, confirmText: `Remove ${box.id}? Its files are deleted; its history stays.` })}
      </div>
    </section>
  );
}
