import type { ReactNode } from "react";
import { Link, useNavigation } from "react-router";
import type { BoxJson } from "~/models/box.server";
import { removeBoxConfirm } from "./box-name";
import type { ConfirmText } from "./confirm-dialog";
import { CopyButton } from "./copy-button";
import { PostForm } from "./post-form";
import { duration, when } from "./ui";

// The box page's facts about the box: its header (id, state, size, expiry, whether the page is
// live), the Details card and the lifecycle actions (pause, resume, stop, remove).

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

export function BoxHeader({ box, now, live }: { box: BoxJson; now: number; live: boolean }) {
  return (
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
  );
}

export function BoxDetails({ box, now, workspace }: { box: BoxJson; now: number; workspace: { id: string; name: string } }) {
  const rows: [string, ReactNode][] = [
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

export function BoxLifecycle({ box, csrf }: { box: BoxJson; csrf: string }) {
  const navigation = useNavigation();
  const pending = navigation.state !== "idle" ? navigation.formData?.get("intent") : undefined;
  const act = (intent: string, label: string, opts: { danger?: boolean; confirm?: ConfirmText } = {}) => (
    <PostForm csrf={csrf} intent={intent} confirm={opts.confirm}>
      <button
        type="submit"
        disabled={pending !== undefined}
        className={`w-full rounded-md px-3 py-1.5 text-sm font-medium ring-1 disabled:opacity-50 ${
          opts.danger ? "text-red-700 ring-red-200 hover:bg-red-50" : "text-slate-800 ring-slate-300 hover:bg-slate-50"
        }`}
      >
        {pending === intent ? `${label}…` : label}
      </button>
    </PostForm>
  );
  return (
    <section aria-labelledby="actions-h" className="rounded-xl border border-slate-200 bg-white p-4 shadow-sm">
      <h2 id="actions-h" className="text-sm font-semibold">Actions</h2>
      <div className="mt-3 grid grid-cols-2 gap-2">
        {box.state === "ready" ? act("pause", "Pause") : null}
        {box.state === "paused" || box.state === "stopped" ? act("resume", "Resume") : null}
        {box.state === "ready" || box.state === "paused" ? act("stop", "Stop") : null}
        {act("remove", "Remove", { danger: true, confirm: removeBoxConfirm(box) })}
      </div>
    </section>
  );
}
