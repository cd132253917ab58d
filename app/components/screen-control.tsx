import { useEffect, useRef } from "react";
import { useFetcher } from "react-router";
import type { ScreenStatus } from "~/models/screen-status.server";
import { SCREEN_SHORTCUTS, matchShortcut } from "./screen-shortcuts";
import { Alert, CsrfInput } from "./ui";

// Who has control of a box's screen, and who is here: the control banner with its counters, and
// take over / give back (through the box page's action, also from the pop-out window), with
// their keyboard shortcuts (screen-shortcuts.ts), above the page's own answers. Someone who may
// not take over sees why instead of the controls ("View only").

/** What the box page's action answers (routes/box.tsx). */
export type BoxActionResult = { ok: string } | { error: string } | { clipboard: string };

export type Control = ReturnType<typeof controlOf>;

export function controlOf(s: ScreenStatus | undefined, me: string, canDrive: boolean) {
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

/** Why this person only watches, or null when they may take over or give back. */
function viewOnlyWhy(control: Control, canDrive: boolean): string | null {
  if (!canDrive) return "Your role in this workspace (viewer) lets you watch; members can take over.";
  if (control.blockedByOther) return `${control.t?.by_name ?? "Another person"} has this screen; you can take over once they give it back.`;
  return null;
}

const kbd = "ml-2 hidden rounded px-1 font-mono text-[0.65rem] font-normal ring-1 sm:inline";

export function ScreenControl({
  control,
  status,
  screen,
  csrf,
  canDrive,
  ready,
  result,
  action,
  compact = false,
  recorded = false,
}: {
  control: Control;
  status: ScreenStatus | undefined;
  screen: number;
  csrf: string;
  canDrive: boolean;
  ready: boolean;
  /** The page's last answer to a form (lifecycle actions). */
  result?: BoxActionResult | undefined;
  /** Where take over and give back post (the box page's action; the pop-out posts there too). */
  action?: string;
  /** One line, for the pop-out window. */
  compact?: boolean;
  /** The box records a screen while a person holds it (its `record_takeovers`): the person is told. */
  recorded?: boolean;
}) {
  const fetcher = useFetcher<BoxActionResult>();
  // Take over and give back speak through the banner; only their refusals show here.
  const refused = fetcher.state === "idle" && fetcher.data && "error" in fetcher.data ? fetcher.data.error : null;
  const busy = fetcher.state !== "idle";
  const viewOnly = ready ? viewOnlyWhy(control, canDrive) : null;
  const mayTake = canDrive && ready && !control.mine && !control.blockedByOther;
  const mayGive = canDrive && ready && control.mine;

  // The shortcuts, from anywhere on the page, the focused screen included (capture phase).
  const latest = useRef({ mayTake, mayGive, busy, submit: fetcher.submit, csrf, screen, action });
  latest.current = { mayTake, mayGive, busy, submit: fetcher.submit, csrf, screen, action };
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      const which = matchShortcut(e);
      if (!which) return;
      e.preventDefault();
      const s = latest.current;
      const intent = which === "takeOver" ? (s.mayTake ? "takeover" : null) : s.mayGive ? "giveback" : null;
      if (!intent || s.busy) return;
      void s.submit({ intent, screen: String(s.screen), csrf: s.csrf }, { method: "post", ...(s.action ? { action: s.action } : {}) });
    };
    window.addEventListener("keydown", onKey, true);
    return () => window.removeEventListener("keydown", onKey, true);
  }, []);

  const controls = viewOnly ? (
    <p data-testid="view-only" className={`max-w-md text-xs ${control.t ? "text-amber-900" : "text-slate-700"}`}>
      <span className="mr-1.5 rounded bg-slate-900/10 px-1.5 py-0.5 font-semibold">View only</span>
      {viewOnly}
    </p>
  ) : mayGive ? (
    <fetcher.Form method="post" action={action}>
      <CsrfInput token={csrf} />
      <input type="hidden" name="intent" value="giveback" />
      <input type="hidden" name="screen" value={screen} />
      <button
        type="submit"
        disabled={busy}
        aria-keyshortcuts={SCREEN_SHORTCUTS.giveBack.aria}
        title={`Give back (${SCREEN_SHORTCUTS.giveBack.label}, also while the screen has the keyboard)`}
        className="rounded-md bg-white px-3 py-1.5 text-sm font-medium text-indigo-700 shadow-sm hover:bg-indigo-50 disabled:opacity-60"
      >
        Give back
        <kbd aria-hidden="true" className={`${kbd} ring-indigo-200`}>
          {SCREEN_SHORTCUTS.giveBack.label}
        </kbd>
      </button>
    </fetcher.Form>
  ) : mayTake ? (
    <fetcher.Form method="post" action={action} className="flex flex-wrap items-center gap-3">
      <CsrfInput token={csrf} />
      <input type="hidden" name="intent" value="takeover" />
      <input type="hidden" name="screen" value={screen} />
      {compact ? null : (
        <label className="flex items-center gap-1.5 text-xs">
          <input type="checkbox" name="shared" className="rounded" />
          Shared with the agent
        </label>
      )}
      <button
        type="submit"
        disabled={busy}
        aria-keyshortcuts={SCREEN_SHORTCUTS.takeOver.aria}
        title={`Take over (${SCREEN_SHORTCUTS.takeOver.label})`}
        className="rounded-md bg-indigo-600 px-3 py-1.5 text-sm font-medium text-white shadow-sm hover:bg-indigo-500 disabled:cursor-not-allowed disabled:opacity-50"
      >
        Take over
        <kbd aria-hidden="true" className={`${kbd} ring-indigo-300`}>
          {SCREEN_SHORTCUTS.takeOver.label}
        </kbd>
      </button>
    </fetcher.Form>
  ) : null;

  return (
    <>
      {refused ? <Alert>{refused}</Alert> : null}
      {result && "error" in result ? <Alert>{result.error}</Alert> : null}
      {result && "ok" in result ? <Alert tone="success">{result.ok}</Alert> : null}

      {/* Who has control, and who is here. */}
      <div
        className={`flex flex-wrap items-center justify-between gap-3 ring-1 ${compact ? "rounded-lg px-3 py-1.5" : "rounded-xl px-4 py-3"} ${
          control.mine
            ? "bg-indigo-600 text-white ring-indigo-700"
            : control.t
              ? "bg-amber-50 text-amber-900 ring-amber-200"
              : "bg-white text-slate-800 ring-slate-200"
        }`}
      >
        <div role="status" aria-live="polite" aria-atomic="true" data-testid="control-banner">
          <p className="text-sm font-semibold">{control.banner}</p>
          {control.detail && !compact ? <p className={`text-xs ${control.mine ? "text-indigo-100" : "opacity-80"}`}>{control.detail}</p> : null}
        </div>
        <div className="flex flex-wrap items-center gap-3">
          {recorded && (control.mine || mayTake) ? (
            <p data-testid="takeover-recorded" className={`text-xs ${control.mine ? "text-indigo-100" : "text-slate-600"}`}>
              {control.mine ? "● Recorded into the trace" : "Taking over records the screen"}
            </p>
          ) : null}
          <p
            className={`text-xs tabular-nums ${control.mine ? "text-indigo-100" : "text-slate-600"}`}
            aria-live="polite"
            data-testid="screen-counters"
          >
            {status?.watching ?? 0} watching · {status?.driving ?? 0} driving
          </p>
          {controls}
        </div>
      </div>
    </>
  );
}
