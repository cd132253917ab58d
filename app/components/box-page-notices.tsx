import type { BoxJson } from "~/models/box.server";
import { BoxNotice } from "./box-notice";
import type { BoxActionResult } from "./screen-control";
import type { LiveAccess } from "./use-live-box";
import { Alert } from "./ui";

// What the box page shows instead of the box: the box was removed, or the page was opened for a
// desktop the box no longer runs; and the page's answers to its forms where the screen's control
// banner (which shows them for a running box) is not shown.

export function ActionAlerts({ result }: { result: BoxActionResult | undefined }) {
  if (!result) return null;
  if ("error" in result) return <Alert>{result.error}</Alert>;
  if ("ok" in result) return <Alert tone="success">{result.ok}</Alert>;
  return null;
}

export function RemovedBox({ id, why }: { id: string; why: string }) {
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

/**
 * The person's access to the box's workspace ended while the page was open (server/revocation.ts
 * told it): say so instead of the screen and its controls, which no longer work for them.
 */
export function AccessGone({ id, workspace, access }: { id: string; workspace: string; access: Exclude<LiveAccess, { kind: "role" }> }) {
  return (
    <BoxNotice
      id={id}
      title={access.kind === "removed" ? `You are no longer a member of ${workspace}` : "Your access to this box ended"}
      links={[{ to: "/", label: "Back to boxes" }]}
    >
      <p>{access.kind === "removed" ? "An owner or admin removed you: its boxes are no longer yours to see." : access.why}</p>
    </BoxNotice>
  );
}

/** The desktop a viewer URL names (`desktop=`): it changes when a stopped box resumes. */
export const desktopIn = (url: string) => new URL(url).searchParams.get("desktop");

/**
 * The page was opened for a desktop the box does not run: an earlier one (it was stopped and
 * resumed since), or one it never ran (a number past its current one, or not a number: a link
 * mistyped or made up). Say which, with the way to the current one, rather than show the current
 * desktop as if it were the link's.
 */
export function StaleDesktop({ box, screen, desktop }: { box: BoxJson; screen: number; desktop: string }) {
  const currentUrl = new URL(box.viewer_urls[screen] ?? box.viewer_url);
  const current = Number(currentUrl.searchParams.get("desktop"));
  const earlier = /^[1-9][0-9]*$/.test(desktop) && Number(desktop) < current;
  return (
    <BoxNotice
      id={box.id}
      title={earlier ? "This desktop was restarted" : "This link's desktop does not exist"}
      links={[
        { to: `/boxes/${box.id}${currentUrl.search}`, label: "Open the current desktop" },
        { to: `/boxes/${box.id}/trace`, label: "See its trace" },
      ]}
    >
      {earlier ? (
        <p>The box was stopped and resumed since this link was made, so it runs a new desktop: nothing that was open on the old one is there.</p>
      ) : (
        <p>
          This link names desktop “{desktop}”, which this box never ran: it runs desktop {current}
          {current > 1 ? ` (a new one each time it was resumed after a stop)` : ""}.
        </p>
      )}
    </BoxNotice>
  );
}
