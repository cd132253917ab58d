import { type ReactNode, useCallback } from "react";
import { Link, useNavigate, useNavigation } from "react-router";
import type { BoxJson } from "~/models/box.server";
import { BoxLabels, RenameForm, editable, useEditor } from "./box-meta-edit";
import { boxTitle, removeBoxConfirm } from "./box-name";
import type { ConfirmText } from "./confirm-dialog";
import { CopyButton } from "./copy-button";
import { PostForm } from "./post-form";
import { seconds } from "./start-progress";
import { duration, when } from "./ui";

// The box page's facts about the box: its header (id, state, size, expiry, whether the page is
// live), the Details card and the lifecycle actions (pause, resume, stop, remove), each showing
// what it is doing while it runs ("Pausing…", and the state pill "pausing…"). A failed box shows
// neither its expiry nor the page's live status: nothing about it changes until it is removed.

/** What each lifecycle intent is while it runs. */
const DOING: Record<string, string> = {
  pause: "Pausing",
  resume: "Resuming",
  stop: "Stopping",
  remove: "Removing",
  relaunch: "Launching",
};

/** The lifecycle intent this page has sent and not yet seen answered (with its reload), if any. */
export function usePendingIntent(): string | undefined {
  const navigation = useNavigation();
  if (navigation.state === "idle") return undefined;
  const intent = navigation.formData?.get("intent");
  return typeof intent === "string" && intent in DOING ? intent : undefined;
}

/** A button's label while its intent runs: "Pausing…". */
export const pendingLabel = (intent: string, label: string) => `${DOING[intent] ?? label}…`;

const STATE_STYLE: Record<string, string> = {
  ready: "bg-emerald-100 text-emerald-800 ring-emerald-200",
  starting: "bg-amber-100 text-amber-800 ring-amber-200",
  paused: "bg-sky-100 text-sky-800 ring-sky-200",
  stopped: "bg-slate-200 text-slate-700 ring-slate-300",
  unreachable: "bg-orange-100 text-orange-800 ring-orange-200",
  failed: "bg-red-100 text-red-800 ring-red-200",
  gone: "bg-slate-100 text-slate-600 ring-slate-200",
};

function StatePill({ state, reason }: { state: string; reason?: string }) {
  const pending = usePendingIntent();
  return (
    <span
      data-testid="box-state"
      title={reason}
      aria-busy={pending ? true : undefined}
      className={`inline-flex items-center gap-1 rounded-full px-2.5 py-0.5 text-xs font-medium ring-1 ring-inset ${STATE_STYLE[state] ?? ""}`}
    >
      <span
        aria-hidden
        className={`h-1.5 w-1.5 rounded-full ${pending ? "animate-pulse bg-current" : state === "ready" ? "bg-emerald-500" : "bg-current opacity-60"}`}
      />
      {pending ? pendingLabel(pending, state).toLowerCase() : state}
    </span>
  );
}

/** Where a label chip leads: the box list, filtered by that label. */
const listOf = (label: string) => `/?${new URLSearchParams({ label }).toString()}`;

/**
 * The box by its name when it has one (its id under it), else by its id; its labels as chips that
 * open the list filtered by them. A member renames it and edits its labels here as in the list.
 */
export function BoxHeader({
  box,
  now,
  live,
  retrying = false,
  csrf,
  canEdit,
}: {
  box: BoxJson;
  now: number;
  live: boolean;
  /** The server could not check access just now; the page is trying again. */
  retrying?: boolean;
  csrf: string;
  canEdit: boolean;
}) {
  const failed = box.state === "failed";
  const { editing: renaming, open: startRenaming, close: stopRenaming, opener: renameButton } = useEditor();
  const navigate = useNavigate();
  const onLabel = useCallback((label: string) => navigate(listOf(label)), [navigate]);
  const title = boxTitle(box);
  return (
    <div className="flex flex-wrap items-start justify-between gap-4">
      <div className="min-w-0">
        <nav aria-label="Breadcrumb" className="text-sm text-slate-600">
          <Link to="/" className="hover:underline">Boxes</Link> / <span className={box.name ? "" : "font-mono"}>{title}</span>
        </nav>
        {renaming ? (
          <div className="mt-1 max-w-md">
            <RenameForm box={box} csrf={csrf} close={stopRenaming} />
          </div>
        ) : (
          <div className="mt-1 flex flex-wrap items-center gap-3">
            <h1 className="flex min-w-0 flex-wrap items-center gap-3 text-2xl font-semibold tracking-tight">
              <span className={box.name ? "truncate" : "truncate font-mono text-xl"}>{box.name ?? box.id}</span>
              <StatePill state={box.state} reason={box.reason} />
            </h1>
            {canEdit && editable(box) ? (
              <button ref={renameButton} type="button" onClick={startRenaming} aria-label={`Rename ${title}`} className="box-small-btn">
                Rename
              </button>
            ) : null}
          </div>
        )}
        {box.name ? <p className="mt-0.5 font-mono text-xs text-slate-500">{box.id}</p> : null}
        <p className="mt-1 text-sm text-slate-600">
          {box.width}×{box.height}
          {box.screens > 1 ? ` · ${box.screens} screens` : ""}
          {failed ? null : (
            <>
              {" "}· expires in {duration(box.expires_at_ms - now)} ·{" "}
              <span className={live ? "text-emerald-700" : "text-slate-600"}>{live ? "● live" : retrying ? "○ reconnecting…" : "○ connecting…"}</span>
            </>
          )}
        </p>
        <div className="mt-2 empty:hidden">
          <BoxLabels box={box} csrf={csrf} canEdit={canEdit} hrefFor={listOf} onLabel={onLabel} />
        </div>
      </div>
    </div>
  );
}

export function BoxDetails({ box, now, workspace }: { box: BoxJson; now: number; workspace: { id: string; name: string } }) {
  const failed = box.state === "failed";
  const started = box.start?.phase === "ready" ? startTook(box.start) : undefined;
  const rows: [string, ReactNode][] = [
    ["State", <StatePill key="s" state={box.state} reason={box.reason} />],
    ["Size", `${box.width}×${box.height}${box.screens > 1 ? ` · ${box.screens} screens` : ""}`],
    ["Desktop", box.spec.desktop.server === "wayland" ? "Wayland (sway)" : "X11"],
    ["Created", <span key="c" title={when(box.created_at_ms)}>{duration(now - box.created_at_ms)} ago</span>],
  ];
  if (started) rows.push(["Started", <span key="st" title={started.title}>in {started.took}</span>]);
  if (!failed) rows.push(["Expires", <span key="e" title={when(box.expires_at_ms)}>in {duration(box.expires_at_ms - now)}</span>]);
  rows.push(
    ["Owner", box.owner === workspace.id ? workspace.name : (box.owner ?? "server token")],
    ["Runtime", box.runtime],
    ["Network", box.spec.policy.network ? "on" : "off"],
  );
  // Direct viewer sockets (ADR 0029): say that the box serves them, and where they are published.
  const { auth, bind } = box.spec.policy;
  if (auth !== "none") rows.push(["Direct viewer", `${auth === "token" ? "signed tickets" : "password, watching only"} · ${bind === "any" ? "every address" : "loopback"}`]);
  return (
    <section aria-labelledby="details-h" className="rounded-xl border border-slate-200 bg-white p-4 shadow-sm">
      <h2 id="details-h" className="text-sm font-semibold">Details</h2>
      <dl className="mt-3 space-y-2 text-sm">
        {rows.map(([k, v]) => (
          <div key={k} className="flex items-center justify-between gap-3">
            <dt className="text-slate-600">{k}</dt>
            <dd className="text-right tabular-nums text-slate-800">{v}</dd>
          </div>
        ))}
      </dl>
      {box.reason && !failed ? <p className="mt-3 break-words text-xs text-slate-600 [overflow-wrap:anywhere]">{box.reason}</p> : null}
      <div className="mt-3 flex items-center justify-between gap-2 border-t border-slate-100 pt-3">
        <code className="truncate font-mono text-xs text-slate-600">{box.id}</code>
        <span className="shrink-0 whitespace-nowrap">
          <CopyButton text={box.id} label="Copy id" />
        </span>
      </div>
    </section>
  );
}

/** How long a finished start took, and each phase's share of it (for a tooltip). */
function startTook(start: NonNullable<BoxJson["start"]>): { took: string; title: string } | undefined {
  const first = start.phases[0]?.at_ms;
  if (first === undefined || start.ended_ms === undefined) return undefined;
  const parts = start.phases.map((p, i) => `${p.name} ${seconds((start.phases[i + 1]?.at_ms ?? start.ended_ms!) - p.at_ms)}`);
  return { took: seconds(start.ended_ms - first), title: parts.join(" · ") };
}

export function BoxLifecycle({ box, csrf }: { box: BoxJson; csrf: string }) {
  const pending = usePendingIntent();
  // A failed box's actions are on its failure card (start-panel.tsx).
  if (box.state === "failed") return null;
  const act = (intent: string, label: string, opts: { danger?: boolean; confirm?: ConfirmText } = {}) => (
    <PostForm csrf={csrf} intent={intent} confirm={opts.confirm}>
      <button
        type="submit"
        disabled={pending !== undefined}
        className={`w-full rounded-md px-3 py-1.5 text-sm font-medium ring-1 disabled:opacity-50 ${
          opts.danger ? "text-red-700 ring-red-200 hover:bg-red-50" : "text-slate-800 ring-slate-300 hover:bg-slate-50"
        }`}
      >
        {pending === intent ? pendingLabel(intent, label) : label}
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
      {box.spec.desktop.features.includes("video") ? (
        // Per box: every takeover of a screen is recorded into the trace (takeover-recording.server.ts).
        <PostForm csrf={csrf} intent="record_takeovers" fields={{ on: box.record_takeovers ? "0" : "1" }} className="mt-3">
          <button
            type="submit"
            role="switch"
            aria-checked={box.record_takeovers}
            disabled={pending !== undefined}
            title="Records a screen into the trace from the moment a person takes it over until it is given back"
            className="flex w-full items-center justify-between gap-3 rounded-md px-3 py-1.5 text-left text-sm text-slate-800 ring-1 ring-slate-300 hover:bg-slate-50 disabled:opacity-50"
          >
            <span>Record while a person has the screen</span>
            <span className={`rounded-full px-2 text-xs font-medium ${box.record_takeovers ? "bg-indigo-600 text-white" : "bg-slate-200 text-slate-700"}`}>
              {box.record_takeovers ? "On" : "Off"}
            </span>
          </button>
        </PostForm>
      ) : null}
    </section>
  );
}
