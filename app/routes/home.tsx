import { useEffect, useState } from "react";
import { Form, useNavigation } from "react-router";
import { io } from "socket.io-client";
import type { Route } from "./+types/home";
import type { BoxJson } from "~/models/box.server";
import { BoxTable } from "~/components/box-table";
import { createBox, listBoxes, removeBox } from "~/models/box.server";
import { isApiError } from "~/utils/api-error.server";

export const meta: Route.MetaFunction = () => [{ title: "Boxes · holm" }];

export async function loader() {
  return { boxes: await listBoxes({ kind: "server" }) };
}

export async function action({ request }: Route.ActionArgs) {
  const form = await request.formData();
  const intent = form.get("intent");
  try {
    if (intent === "remove") {
      await removeBox({ kind: "server" }, String(form.get("id")));
      return { ok: true };
    }
    if (intent === "launch") {
      const width = Number(form.get("width") || 1280);
      const height = Number(form.get("height") || 800);
      const screens = Number(form.get("screens") || 1);
      // Queued, so the list shows the box `starting` and then `ready` as it happens.
      await createBox({ kind: "server" }, { spec: { desktop: { width, height, screens } } }, { queue: true });
      return { ok: true };
    }
    return { ok: false, error: "unknown intent" };
  } catch (e) {
    if (isApiError(e)) return { ok: false, error: e.message };
    throw e;
  }
}

/** Keeps the list current from the server's pushes; the loader gives the first paint. */
function useLiveBoxes(initial: BoxJson[]) {
  const [boxes, setBoxes] = useState(initial);
  const [live, setLive] = useState(false);
  useEffect(() => setBoxes(initial), [initial]);
  useEffect(() => {
    const socket = io("/boxes", { transports: ["websocket"] });
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
  }, []);
  return { boxes, live };
}

export default function Home({ loaderData, actionData }: Route.ComponentProps) {
  const { boxes, live } = useLiveBoxes(loaderData.boxes);
  const navigation = useNavigation();
  const launching = navigation.formData?.get("intent") === "launch";
  return (
    <div className="mx-auto max-w-6xl px-4 py-8 sm:px-6">
      <header className="flex flex-wrap items-center justify-between gap-4">
        <div>
          <h1 className="text-2xl font-semibold tracking-tight">Boxes</h1>
          <p className="text-sm text-slate-600">
            Isolated desktops that agents drive and people watch.{" "}
            <span aria-live="polite" className={live ? "text-emerald-700" : "text-slate-500"}>
              {live ? "● live" : "○ connecting…"}
            </span>
          </p>
        </div>
        <Form method="post" className="flex flex-wrap items-end gap-2" aria-label="Launch a box">
          <input type="hidden" name="intent" value="launch" />
          <label className="text-xs text-slate-600">
            Width
            <input name="width" type="number" min={320} max={7680} defaultValue={1280}
              className="mt-1 block w-24 rounded-md border border-slate-300 px-2 py-1 text-sm" />
          </label>
          <label className="text-xs text-slate-600">
            Height
            <input name="height" type="number" min={240} max={4320} defaultValue={800}
              className="mt-1 block w-24 rounded-md border border-slate-300 px-2 py-1 text-sm" />
          </label>
          <label className="text-xs text-slate-600">
            Screens
            <input name="screens" type="number" min={1} max={8} defaultValue={1}
              className="mt-1 block w-16 rounded-md border border-slate-300 px-2 py-1 text-sm" />
          </label>
          <button type="submit" disabled={launching}
            className="rounded-md bg-indigo-600 px-4 py-2 text-sm font-medium text-white shadow-sm hover:bg-indigo-500 disabled:opacity-60">
            {launching ? "Launching…" : "Launch box"}
          </button>
        </Form>
      </header>
      {actionData && !actionData.ok ? (
        <p role="alert" className="mt-4 rounded-md bg-red-50 px-3 py-2 text-sm text-red-800">{actionData.error}</p>
      ) : null}
      <main className="mt-6">
        {boxes.length === 0 ? <EmptyState /> : <BoxTable boxes={boxes} />}
      </main>
    </div>
  );
}

function EmptyState() {
  const origin = typeof window === "undefined" ? "http://127.0.0.1:8080" : window.location.origin;
  return (
    <section className="rounded-xl border border-dashed border-slate-300 bg-white p-8 text-center">
      <h2 className="text-lg font-medium">No boxes yet</h2>
      <p className="mt-1 text-sm text-slate-600">Launch one with the button above, or from an agent:</p>
      <pre className="mx-auto mt-4 max-w-2xl overflow-x-auto rounded-lg bg-slate-900 p-4 text-left text-xs text-slate-100">
        {`curl -fsS ${origin}/v1/boxes -H 'content-type: application/json' -d '{}'`}
      </pre>
    </section>
  );
}
