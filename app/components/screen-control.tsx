import { useFetcher } from "react-router";
import type { ScreenStatus } from "~/models/screen-status.server";
import { Alert, CsrfInput } from "./ui";

// Who has control of a box's screen, and who is here: the control banner with its counters, and
// take over / give back (through the box page's action), above the page's own answers.

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

export function ScreenControl({
  control,
  status,
  screen,
  csrf,
  canDrive,
  ready,
  result,
}: {
  control: Control;
  status: ScreenStatus | undefined;
  screen: number;
  csrf: string;
  canDrive: boolean;
  ready: boolean;
  /** The page's last answer to a form (lifecycle actions). */
  result: BoxActionResult | undefined;
}) {
  const fetcher = useFetcher<BoxActionResult>();
  // Take over and give back speak through the banner; only their refusals show here.
  const refused = fetcher.state === "idle" && fetcher.data && "error" in fetcher.data ? fetcher.data.error : null;
  const busy = fetcher.state !== "idle";
  return (
    <>
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
    </>
  );
}
