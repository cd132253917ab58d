import { useCallback, useEffect, useMemo, useRef, useState } from "react";
import { type ShouldRevalidateFunctionArgs, useNavigation, useSearchParams } from "react-router";
import { io } from "socket.io-client";
import { BoxListControls } from "~/components/box-list-controls";
import {
  type ListBox,
  type ListQuery,
  applyListQuery,
  isFiltered,
  labelsOf,
  labelsProblem,
  parseLabelsText,
  readListQuery,
  toListBox,
  writeListQuery,
} from "~/components/box-list-query";
import { boxTitle } from "~/components/box-name";
import { BoxTable } from "~/components/box-table";
import { LaunchForm } from "~/components/launch-form";
import { Shell } from "~/components/shell";
import { OkOrError, useActionBanner, useAnswerCount } from "~/components/action-banner";
import { Card } from "~/components/ui";
import { lifecycleIntent, metadataIntent } from "~/edge/box-actions.server";
import { requireFormWorkspace, requireWorkspace } from "~/edge/console.server";
import { field, formAction, formFields } from "~/edge/form.server";
import { validate } from "~/edge/route.server";
import type { BoxJson } from "~/models/box.server";
import { createBox, listBoxes } from "~/models/box.server";
import { CreateBoxSchema } from "~/models/spec.server";
import type { FEATURES } from "~/protocol/features";
import { ApiError, badRequest } from "~/utils/api-error.server";
import { publicUrl } from "~/utils/env.server";
import type { Route } from "./+types/home";

export const meta: Route.MetaFunction = () => [{ title: "Boxes · holm" }];

export async function loader({ request }: Route.LoaderArgs) {
  const ctx = await requireWorkspace(request);
  return {
    pageWorkspace: ctx.workspace.id,
    boxes: (await listBoxes(ctx.actor)).map(toListBox),
    workspace: { id: ctx.workspace.id, name: ctx.workspace.name, role: ctx.workspace.role },
    csrf: ctx.csrf,
    base: publicUrl(),
    now: Date.now(),
  };
}

/** Filter, sort and search live in the query and are applied in the page: they need no new list. */
export function shouldRevalidate({ currentUrl, nextUrl, formMethod, defaultShouldRevalidate }: ShouldRevalidateFunctionArgs) {
  if (!formMethod && currentUrl.pathname === nextUrl.pathname) return false;
  return defaultShouldRevalidate;
}

function num(form: FormData, name: string, fallback: number): number {
  const raw = field(form, name);
  if (raw === "") return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n)) throw badRequest(`${name} must be a whole number`, name);
  return n;
}

/** The launch form's name and labels as `metadata` (validated with the rest, by the /v1 schema). */
function metadataOf(form: FormData) {
  const name = field(form, "name").trim();
  const text = field(form, "labels");
  const problem = labelsProblem(text);
  const labels = parseLabelsText(text);
  if (problem || !labels) throw badRequest(problem ?? "Write each label as key=value, separated by commas.", "metadata.labels");
  return { ...(name ? { name } : {}), ...(Object.keys(labels).length ? { labels } : {}) };
}

/** The launch form's fields by the request fields they become (formFields); the rest (features, a quota) are said in the banner. */
const LAUNCH_FIELDS = {
  "metadata.name": "name",
  "metadata.labels": "labels",
  "spec.desktop.width": "width",
  "spec.desktop.height": "height",
  "spec.desktop.screens": "screens",
  "placement.expires_after_secs": "lifetime_minutes",
  width: "width",
  height: "height",
  screens: "screens",
  lifetime_minutes: "lifetime_minutes",
};

/** The launch form's box, made as POST /v1/boxes makes one. */
async function launch(actor: Parameters<typeof createBox>[0], form: FormData) {
  const server = field(form, "server") === "wayland" ? "wayland" : "x11";
  const features = form.getAll("features").map(String) as (typeof FEATURES)[number][];
  const minutes = num(form, "lifetime_minutes", 60);
  // Through the same schema as /v1, so the console cannot launch what the API would refuse.
  const input = validate(CreateBoxSchema, {
    spec: {
      desktop: { server, width: num(form, "width", 1280), height: num(form, "height", 800), screens: num(form, "screens", 1), features },
      policy: { network: form.get("network") !== "off" },
    },
    placement: { expires_after_secs: minutes * 60 },
    metadata: metadataOf(form),
  }, "form");
  // Queued, so the list shows the box `starting` and then `ready` as it happens.
  const { box } = await createBox(actor, input, { queue: true });
  return { ok: `Launching ${boxTitle(box)}…` };
}

export async function action({ request }: Route.ActionArgs) {
  return formAction(async () => {
    const form = await request.formData();
    const ctx = await requireFormWorkspace(request, form, "member");
    const id = field(form, "id");
    switch (field(form, "intent")) {
      case "launch":
        return formFields(LAUNCH_FIELDS, () => launch(ctx.actor, form));
      default: {
        const intent = field(form, "intent");
        const done = (await metadataIntent(ctx.actor, intent, id, form)) ?? (await lifecycleIntent(ctx.actor, intent, id));
        if (!done) throw new ApiError("bad_request", "unknown action");
        return done;
      }
    }
  });
}

/** `next`, or the same object as `prev` when nothing the list shows changed (so its row does not render again). */
function same(prev: ListBox | undefined, next: ListBox): ListBox {
  return prev && JSON.stringify(prev) === JSON.stringify(next) ? prev : next;
}
const merge = (prev: ListBox | undefined, box: BoxJson) => same(prev, toListBox(box));

/** A new whole list (the loader's, the socket's first), keeping the rows that did not change. */
function mergeAll(prev: ListBox[], next: ListBox[]): ListBox[] {
  const byId = new Map(prev.map((b) => [b.id, b]));
  return next.map((b) => same(byId.get(b.id), b));
}

/** Keeps the list current from the server's pushes for this workspace; the loader paints first. */
function useLiveBoxes(initial: ListBox[], workspace: string) {
  const [boxes, setBoxes] = useState(initial);
  const [live, setLive] = useState(false);
  useEffect(() => setBoxes((prev) => mergeAll(prev, initial)), [initial]);
  useEffect(() => {
    const socket = io("/boxes", { transports: ["websocket"], auth: { workspace } });
    socket.on("connect", () => setLive(true));
    socket.on("disconnect", () => setLive(false));
    socket.on("boxes", (all: BoxJson[]) => setBoxes((prev) => mergeAll(prev, all.map(toListBox))));
    socket.on("box", (box: BoxJson) =>
      setBoxes((prev) => {
        if (box.state === "gone") return prev.filter((b) => b.id !== box.id);
        const i = prev.findIndex((b) => b.id === box.id);
        if (i === -1) return [toListBox(box), ...prev];
        const next = prev.slice();
        next[i] = merge(prev[i], box);
        return next;
      }),
    );
    return () => {
      socket.close();
    };
  }, [workspace]);
  return { boxes, live };
}

/** The list's query in the URL (replacing the entry, so typing a search is not a history of it). */
function useListQuery() {
  const [params, setParams] = useSearchParams();
  const query = useMemo(() => readListQuery(params), [params]);
  // Each change builds on the one before it, not on the URL of the last render: a navigation
  // is committed a moment later, and a search typed right after "Clear filters" was built on
  // the old URL and brought the cleared label filter back (seen on a busy machine).
  // A URL that arrives from elsewhere (back/forward, a reload) is the new base; one of our own
  // arriving late is not (a newer change is already on its way).
  const latest = useRef(params);
  const ours = useRef(new Set<string>());
  useEffect(() => {
    const s = params.toString();
    if (!ours.current.delete(s)) {
      latest.current = params;
      ours.current.clear();
    }
  }, [params]);
  const change = useCallback(
    (q: Partial<ListQuery>) => {
      latest.current = writeListQuery(latest.current, q);
      ours.current.add(latest.current.toString());
      setParams(latest.current, { replace: true, preventScrollReset: true });
    },
    [setParams],
  );
  // A form posted to this (index) route leaves `?index` in the address (React Router marks the
  // route it posts to so): not the list's, and a link copied from there carries it along.
  useEffect(() => {
    const url = new URL(window.location.href);
    if (!url.searchParams.has("index")) return;
    url.searchParams.delete("index");
    window.history.replaceState(window.history.state, "", url);
  }, [params]);
  const hrefFor = useCallback((label: string) => `?${writeListQuery(params, { label }).toString()}`, [params]);
  const onLabel = useCallback((label: string) => change({ label }), [change]);
  return { query, change, hrefFor, onLabel };
}

export default function Home({ loaderData, actionData }: Route.ComponentProps) {
  const { workspace, csrf, base } = loaderData;
  const { boxes, live } = useLiveBoxes(loaderData.boxes, workspace.id);
  const { query, change, hrefFor, onLabel } = useListQuery();
  const shown = useMemo(() => applyListQuery(boxes, query), [boxes, query]);
  const labels = useMemo(() => labelsOf(boxes), [boxes]);
  const counts = useMemo(() => {
    const c: Record<string, number> = {};
    for (const b of boxes) c[b.state] = (c[b.state] ?? 0) + 1;
    return c;
  }, [boxes]);
  const navigation = useNavigation();
  const launching = navigation.formData?.get("intent") === "launch";
  // "Launching …" belongs to that launch: it goes on the next action, on Dismiss or after 10 s;
  // a launch that went through empties the form for the next one.
  const banner = useActionBanner(actionData, { okMs: 10_000 });
  const launches = useAnswerCount(actionData, (a) => "ok" in a && /^Launching /.test(String(a.ok)));
  const canDrive = workspace.role !== "viewer";
  useEffect(() => {
    // For bench/box-list.ts: the page has hydrated (children's effects ran first), so its controls answer.
    performance.mark("holm:box-list:interactive");
  }, []);
  return (
    <Shell>
      <div className="flex flex-wrap items-end justify-between gap-4">
        <div>
          <h1 className="text-2xl font-semibold tracking-tight">Boxes</h1>
          <p className="text-sm text-slate-600">
            Isolated desktops in {workspace.name}.{" "}
            <span aria-live="polite" className={live ? "text-emerald-700" : "text-slate-600"}>
              {live ? "● live" : "○ connecting…"}
            </span>
          </p>
        </div>
      </div>
      <div className="mt-4 space-y-4">
        <OkOrError shown={banner.shown} dismiss={banner.dismiss} />
        {canDrive ? <LaunchForm resetKey={launches} csrf={csrf} open={boxes.length === 0} launching={launching} answer={banner.shown} /> : null}
        {boxes.length === 0 ? (
          <EmptyState base={base} canDrive={canDrive} />
        ) : (
          <>
            <BoxListControls query={query} labels={labels} counts={counts} shown={shown.length} total={boxes.length} onChange={change} />
            {shown.length ? (
              <BoxTable boxes={shown} csrf={csrf} canDrive={canDrive} hrefFor={hrefFor} onLabel={onLabel} serverNow={loaderData.now} />
            ) : (
              <Card>
                <h2 className="text-base font-medium">No boxes match</h2>
                <p className="mt-1 text-sm text-slate-600">
                  {isFiltered(query) ? "Nothing in this workspace matches the search and filters above." : ""}
                </p>
              </Card>
            )}
          </>
        )}
      </div>
    </Shell>
  );
}

function EmptyState({ base, canDrive }: { base: string; canDrive: boolean }) {
  return (
    <Card>
      <h2 className="text-lg font-medium">No boxes yet</h2>
      {canDrive ? (
        <ol className="mt-2 list-decimal space-y-2 pl-5 text-sm text-slate-700">
          <li>Launch one with <strong>Launch a box</strong> above, and watch it start here.</li>
          <li>
            Or let an agent do it: <a className="text-indigo-700 underline" href="/keys">create an API key</a>, then
            <pre data-testid="empty-curl" className="mt-2 overflow-x-auto rounded-lg bg-slate-900 p-3 text-xs text-slate-100">
              {`curl -fsS ${base}/v1/boxes -H "authorization: Bearer $HOLM_TOKEN" -H 'content-type: application/json' -d '{}'`}
            </pre>
          </li>
        </ol>
      ) : (
        <p className="mt-2 text-sm text-slate-600">You are a viewer here: boxes that members launch appear in this list.</p>
      )}
    </Card>
  );
}
