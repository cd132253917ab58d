import { useEffect, useState } from "react";
import { Form, useNavigation } from "react-router";
import { io } from "socket.io-client";
import { BoxTable } from "~/components/box-table";
import { Shell } from "~/components/shell";
import { Alert, Button, Card, CsrfInput } from "~/components/ui";
import { lifecycleIntent } from "~/edge/box-actions.server";
import { requireCsrf, requireWorkspace } from "~/edge/console.server";
import { field, formAction } from "~/edge/form.server";
import { validate } from "~/edge/route.server";
import type { BoxJson } from "~/models/box.server";
import { createBox, listBoxes } from "~/models/box.server";
import { CreateBoxSchema } from "~/models/spec.server";
import { FEATURES } from "~/protocol/features";
import { ApiError } from "~/utils/api-error.server";
import { publicUrl } from "~/utils/env.server";
import type { Route } from "./+types/home";

export const meta: Route.MetaFunction = () => [{ title: "Boxes · holm" }];

export async function loader({ request }: Route.LoaderArgs) {
  const ctx = await requireWorkspace(request);
  return {
    boxes: await listBoxes(ctx.actor),
    workspace: { id: ctx.workspace.id, name: ctx.workspace.name, role: ctx.workspace.role },
    csrf: ctx.csrf,
    base: publicUrl(),
  };
}

function num(form: FormData, name: string, fallback: number): number {
  const raw = field(form, name);
  if (raw === "") return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n)) throw new ApiError("bad_request", `${name} must be a whole number`);
  return n;
}

export async function action({ request }: Route.ActionArgs) {
  return formAction(async () => {
    const ctx = await requireWorkspace(request, "member");
    const form = await request.formData();
    requireCsrf(form, ctx);
    const id = field(form, "id");
    switch (field(form, "intent")) {
      case "launch": {
        const features = form.getAll("features").map(String) as (typeof FEATURES)[number][];
        const minutes = num(form, "lifetime_minutes", 60);
        // Through the same schema as /v1, so the console cannot launch what the API would refuse.
        const input = validate(CreateBoxSchema, {
          spec: {
            desktop: { width: num(form, "width", 1280), height: num(form, "height", 800), screens: num(form, "screens", 1), features },
            policy: { network: form.get("network") !== "off" },
          },
          placement: { expires_after_secs: minutes * 60 },
        }, "form");
        // Queued, so the list shows the box `starting` and then `ready` as it happens.
        const { box } = await createBox(ctx.actor, input, { queue: true });
        return { ok: `Launching ${box.id.slice(0, 16)}…` };
      }
      default: {
        const done = await lifecycleIntent(ctx.actor, field(form, "intent"), id);
        if (!done) throw new ApiError("bad_request", "unknown action");
        return done;
      }
    }
  });
}

/** Keeps the list current from the server's pushes for this workspace; the loader paints first. */
function useLiveBoxes(initial: BoxJson[], workspace: string) {
  const [boxes, setBoxes] = useState(initial);
  const [live, setLive] = useState(false);
  useEffect(() => setBoxes(initial), [initial]);
  useEffect(() => {
    const socket = io("/boxes", { transports: ["websocket"], auth: { workspace } });
    socket.on("connect", () => setLive(true));
    socket.on("disconnect", () => setLive(false));
    socket.on("boxes", (all: BoxJson[]) => setBoxes(all));
    socket.on("box", (box: BoxJson) =>
      setBoxes((prev) => {
        if (box.state === "gone") return prev.filter((b) => b.id !== box.id);
        const i = prev.findIndex((b) => b.id === box.id);
        if (i === -1) return [box, ...prev];
        const next = prev.slice();
        next[i] = box;
        return next;
      }),
    );
    return () => {
      socket.close();
    };
  }, [workspace]);
  return { boxes, live };
}

export default function Home({ loaderData, actionData }: Route.ComponentProps) {
  const { workspace, csrf, base } = loaderData;
  const { boxes, live } = useLiveBoxes(loaderData.boxes, workspace.id);
  const navigation = useNavigation();
  const launching = navigation.formData?.get("intent") === "launch";
  const canDrive = workspace.role !== "viewer";
  return (
    <Shell>
      <div className="flex flex-wrap items-end justify-between gap-4">
        <div>
          <h1 className="text-2xl font-semibold tracking-tight">Boxes</h1>
          <p className="text-sm text-slate-600">
            Isolated desktops in {workspace.name}.{" "}
            <span aria-live="polite" className={live ? "text-emerald-700" : "text-slate-500"}>
              {live ? "● live" : "○ connecting…"}
            </span>
          </p>
        </div>
      </div>
      <div className="mt-4 space-y-4">
        {actionData && "error" in actionData ? <Alert>{actionData.error}</Alert> : null}
        {actionData && "ok" in actionData ? <Alert tone="success">{actionData.ok}</Alert> : null}
        {canDrive ? (
          <details className="rounded-xl border border-slate-200 bg-white p-4 shadow-sm" open={boxes.length === 0}>
            <summary className="cursor-pointer text-sm font-semibold">Launch a box</summary>
            <Form method="post" className="mt-4 grid gap-4 sm:grid-cols-2 lg:grid-cols-4" aria-label="Launch a box">
              <CsrfInput token={csrf} />
              <input type="hidden" name="intent" value="launch" />
              <NumberField label="Width" name="width" min={320} max={7680} value={1280} />
              <NumberField label="Height" name="height" min={240} max={4320} value={800} />
              <NumberField label="Screens" name="screens" min={1} max={8} value={1} />
              <NumberField label="Lifetime (minutes)" name="lifetime_minutes" min={1} max={43200} value={60} />
              <fieldset className="sm:col-span-2 lg:col-span-3">
                <legend className="text-sm font-medium text-slate-700">Features</legend>
                <div className="mt-1 flex flex-wrap gap-3">
                  {FEATURES.map((f) => (
                    <label key={f} className="flex items-center gap-1 text-sm">
                      <input type="checkbox" name="features" value={f} defaultChecked={["wide_fonts", "video", "dock", "accessibility"].includes(f)} />
                      {f}
                    </label>
                  ))}
                </div>
              </fieldset>
              <label className="flex items-center gap-2 self-end text-sm">
                <input type="checkbox" name="network" value="off" /> No network
              </label>
              <div className="sm:col-span-2 lg:col-span-4">
                <Button type="submit" disabled={launching}>{launching ? "Launching…" : "Launch box"}</Button>
              </div>
            </Form>
          </details>
        ) : null}
        {boxes.length === 0 ? (
          <EmptyState base={base} canDrive={canDrive} />
        ) : (
          <BoxTable boxes={boxes} csrf={csrf} canDrive={canDrive} />
        )}
      </div>
    </Shell>
  );
}

function NumberField({ label, name, min, max, value }: { label: string; name: string; min: number; max: number; value: number }) {
  return (
    <label className="block text-sm">
      <span className="font-medium text-slate-700">{label}</span>
      <input name={name} type="number" min={min} max={max} defaultValue={value}
        className="mt-1 block w-full rounded-md border border-slate-300 px-2 py-1.5 text-sm" />
    </label>
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
            <pre className="mt-2 overflow-x-auto rounded-lg bg-slate-900 p-3 text-xs text-slate-100">
              {`curl -fsS ${base}/v1/boxes -H "authorization: Bearer $HOLM_KEY" -H 'content-type: application/json' -d '{}'`}
            </pre>
          </li>
        </ol>
      ) : (
        <p className="mt-2 text-sm text-slate-600">You are a viewer here: boxes that members launch appear in this list.</p>
      )}
    </Card>
  );
}
