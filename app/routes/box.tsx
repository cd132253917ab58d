import { useEffect, useState } from "react";
import { Link, redirect } from "react-router";
import { BoxDetails, BoxHeader, BoxLifecycle } from "~/components/box-facts";
import { boxTitle } from "~/components/box-name";
import { AccessGone, ActionAlerts, RemovedBox, StaleDesktop, desktopIn } from "~/components/box-page-notices";
import { ClipboardPanel } from "~/components/clipboard-panel";
import { type BoxActionResult, ScreenControl, controlOf } from "~/components/screen-control";
import { ScreenFrame, ScreenTabs } from "~/components/screen-view";
import { FailedPanel, StartingPanel } from "~/components/start-panel";
import { Shell } from "~/components/shell";
import { TerminalPanel } from "~/components/terminal-panel";
import { Alert } from "~/components/ui";
import { useLiveBox, useNow } from "~/components/use-live-box";
import { lifecycleIntent, metadataIntent } from "~/edge/box-actions.server";
import { requireBoxWorkspace, requireCsrf } from "~/edge/console.server";
import { field, formAction } from "~/edge/form.server";
import { noSuchBox, screenOfUrl } from "~/edge/screen-param.server";
import { updateBoxMetadata } from "~/models/box-metadata.server";
import { type BoxJson, getBox, relaunchBox } from "~/models/box.server";
import { screenStatus } from "~/models/screen-status.server";
import { callAgent, requireScreen } from "~/models/screen.server";
import { assertMayDrive, giveBack, takeOver } from "~/models/takeover.server";
import { recordEntry } from "~/models/trace.server";
import { agentCall } from "~/protocol/agent";
import { ApiError, isApiError } from "~/utils/api-error.server";
import type { Route } from "./+types/box";
import { log } from "~/utils/log.server";

// The console page of one box: the live screen (noVNC), who watches and who drives, take over
// and give back, the clipboard while in control, a terminal, the box's facts and its lifecycle
// actions. Live counters and the control banner come over socket.io (`screens` on /boxes).
// Here: the data, the action and the page's layout; its parts are components (box-facts,
// screen-control, screen-view, clipboard-panel, terminal-panel, use-live-box).

export const meta: Route.MetaFunction = ({ data }) => [
  { title: `${data && "box" in data && data.box ? boxTitle(data.box) : "Box"} · holm` },
];

export async function loader({ request, params }: Route.LoaderArgs) {
  const ctx = await requireBoxWorkspace(request, params.id);
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
    if (isApiError(e) && e.code === "not_found") throw noSuchBox(params.id);
    throw e;
  }
  const screen = screenOfUrl(request, box, `/boxes/${encodeURIComponent(box.id)}`);
  const screens = await Promise.all(Array.from({ length: box.screens }, (_, n) => screenStatus(box.id, n)));
  // A viewer URL names the desktop it was made for (`desktop=`); without one, the current one.
  const desktop = new URL(request.url).searchParams.get("desktop");
  return { ...common, box, removed: null, screen, screens, desktop };
}

export async function action({ request, params }: Route.ActionArgs) {
  return formAction(async () => {
    const ctx = await requireBoxWorkspace(request, params.id, "member");
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
        await callAgent(t.box, agentCall("clipboardWrite", { n: t.screen }), { text, selection: "clipboard" });
        await recordEntry(t.box.id, {
          actor: "person",
          event: "person_input",
          screen: t.screen,
          data: { kind: "clipboard", bytes: Buffer.byteLength(text), by: `user:${ctx.user.id}` },
        }).catch((err) => log.error({ err }, "trace clipboard failed"));
        return { clipboard: "Sent: paste it in the box with Ctrl+V." };
      }
      case "record_takeovers": {
        const on = field(form, "on") === "1";
        await updateBoxMetadata(ctx.actor, id, { record_takeovers: on });
        return { ok: on ? "From the next takeover on, a person's time on a screen is recorded into the trace." : "Takeovers are no longer recorded." };
      }
      case "relaunch": {
        const again = await relaunchBox(ctx.actor, id);
        return redirect(`/boxes/${again.id}`);
      }
      default: {
        const intent = field(form, "intent");
        const done = (await metadataIntent(ctx.actor, intent, id, form)) ?? (await lifecycleIntent(ctx.actor, intent, id));
        if (!done) throw new ApiError("bad_request", "unknown action");
        return done;
      }
    }
  });
}

export default function BoxPage({ loaderData, actionData }: Route.ComponentProps) {
  if (!loaderData.box) return <RemovedBox id={loaderData.removed!.id} why={loaderData.removed!.why} />;
  return <LiveBox loaderData={loaderData as Loaded} actionData={actionData as BoxActionResult | undefined} />;
}

type Loaded = Extract<Route.ComponentProps["loaderData"], { removed: null }>;

function LiveBox({ loaderData, actionData }: { loaderData: Loaded; actionData: BoxActionResult | undefined }) {
  const { me, role, workspace, csrf, screen } = loaderData;
  const { box, screens, live, retrying, access } = useLiveBox(loaderData.box, loaderData.screens, workspace.id);
  // The tab's title follows a rename made elsewhere, as the heading does (meta has only the loader's).
  const title = `${boxTitle(box)} · holm`;
  useEffect(() => {
    document.title = title;
  }, [title]);
  const canDrive = role !== "viewer";
  const status = screens[screen];
  const control = controlOf(status, me, canDrive);
  const mode = control.mine && canDrive ? "control" : "view";
  const now = useNow(5000, loaderData.now);
  const [boxClipboard, setBoxClipboard] = useState<string | null>(null);
  const ready = box.state === "ready";
  // What applies to the box as it is: a screen once it has run, control and the terminal while
  // it runs, nothing of a desktop while it starts or after it failed to.
  const settled = box.state !== "starting" && box.state !== "failed";

  if (access && access.kind !== "role") return <AccessGone id={box.id} workspace={workspace.name} access={access} />;
  // Checked on the live box too: a resume while the page is open shows the notice then.
  if (loaderData.desktop !== null && loaderData.desktop !== desktopIn(box.viewer_url)) return <StaleDesktop box={box} screen={screen} desktop={loaderData.desktop} />;
  return (
    <Shell wide>
      {/* The role changed while the page was open; the page was drawn again for the new one. */}
      {access?.kind === "role" ? (
        <div className="mb-4">
          <Alert tone="info">Your role in {workspace.name} is now {access.role}.</Alert>
        </div>
      ) : null}
      <BoxHeader box={box} now={now} live={live} retrying={retrying} csrf={csrf} canEdit={canDrive} />

      {/* The screen takes the width; details and actions go below it, beside it only on very wide windows. */}
      <div className="mt-6 grid gap-6 min-[1800px]:grid-cols-[minmax(0,1fr)_18rem]">
        <div className="min-w-0 space-y-4">
          {ready ? (
            <ScreenControl
              control={control}
              status={status}
              screen={screen}
              csrf={csrf}
              canDrive={canDrive}
              ready={ready}
              result={actionData}
              recorded={box.record_takeovers}
            />
          ) : (
            <ActionAlerts result={actionData} />
          )}
          {settled ? (
            <>
              <ScreenTabs box={box} screen={screen} screens={screens} />
              <ScreenFrame box={box} screen={screen} mode={mode} onClipboard={setBoxClipboard} />
            </>
          ) : box.state === "starting" ? (
            <StartingPanel box={box} now={loaderData.now} />
          ) : (
            <FailedPanel box={box} csrf={csrf} canDrive={canDrive} />
          )}

          {canDrive && mode === "control" ? (
            <ClipboardPanel csrf={csrf} screen={screen} boxClipboard={boxClipboard} />
          ) : boxClipboard !== null ? (
            <p className="text-xs text-slate-600">
              Box clipboard: <code className="break-all">{boxClipboard.slice(0, 200)}</code>
            </p>
          ) : null}

          {canDrive && ready ? (
            <TerminalPanel boxId={box.id} workspace={workspace.id} ready={ready} />
          ) : null}
        </div>

        <aside className="grid content-start gap-4 md:grid-cols-2 min-[1800px]:grid-cols-1">
          <BoxDetails box={box} now={now} workspace={workspace} />
          {canDrive ? <BoxLifecycle box={box} csrf={csrf} /> : null}
          <Link to={`/boxes/${box.id}/trace`} className="block text-sm font-medium text-indigo-700 hover:underline md:col-span-2 min-[1800px]:col-span-1">
            Trace: what happened in this box →
          </Link>
        </aside>
      </div>
    </Shell>
  );
}
