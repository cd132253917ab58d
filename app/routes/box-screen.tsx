import { boxTitle } from "~/components/box-name";
import { AccessGone, RemovedBox } from "~/components/box-page-notices";
import { ScreenControl, controlOf } from "~/components/screen-control";
import { ScreenFrame } from "~/components/screen-view";
import { Alert } from "~/components/ui";
import { useLiveBox } from "~/components/use-live-box";
import { requireBoxWorkspace } from "~/edge/console.server";
import { noSuchBox, screenOfUrl } from "~/edge/screen-param.server";
import { type BoxJson, getBox } from "~/models/box.server";
import { screenStatus } from "~/models/screen-status.server";
import { isApiError } from "~/utils/api-error.server";
import type { Route } from "./+types/box-screen";

// GET /boxes/:id/screen?screen=n — one screen of a box and nothing else, for the box page's
// "Pop out" window: the same session, the same roles and the same mode rules as the box page
// (it watches, and drives while this person has control, following take over and give back
// made anywhere), with take over and give back and their shortcuts posting to the box page's
// action. The clipboard and everything else stay on the box page.

export const meta: Route.MetaFunction = ({ data }) => [
  { title: data && "box" in data && data.box ? `Screen ${data.screen} · ${boxTitle(data.box)} · holm` : "Screen · holm" },
];

export async function loader({ request, params }: Route.LoaderArgs) {
  const ctx = await requireBoxWorkspace(request, params.id);
  const common = { me: `user:${ctx.user.id}`, role: ctx.workspace.role, workspace: ctx.workspace.id, workspaceName: ctx.workspace.name, csrf: ctx.csrf };
  let box: BoxJson;
  try {
    box = await getBox(ctx.actor, params.id);
  } catch (e) {
    if (isApiError(e) && e.code === "gone") return { ...common, box: null, removed: { id: params.id, why: e.message } };
    if (isApiError(e) && e.code === "not_found") throw noSuchBox(params.id);
    throw e;
  }
  const screen = screenOfUrl(request, box, `/boxes/${encodeURIComponent(box.id)}/screen`);
  const screens = await Promise.all(Array.from({ length: box.screens }, (_, n) => screenStatus(box.id, n)));
  return { ...common, box, removed: null, screen, screens };
}

type Loaded = Extract<Route.ComponentProps["loaderData"], { removed: null }>;

export default function BoxScreen({ loaderData }: Route.ComponentProps) {
  if (!loaderData.box) return <RemovedBox id={loaderData.removed!.id} why={loaderData.removed!.why} />;
  return <LiveScreen loaderData={loaderData as Loaded} />;
}

function LiveScreen({ loaderData }: { loaderData: Loaded }) {
  const { me, role, workspace, workspaceName, csrf, screen } = loaderData;
  const { box, screens, access } = useLiveBox(loaderData.box, loaderData.screens, workspace);
  // Removed, or access ended, while the window was open: say so, as the box page does (not "connecting…" for good).
  if (access && access.kind !== "role") return <AccessGone id={box.id} workspace={workspaceName} access={access} />;
  const canDrive = role !== "viewer";
  const status = screens[screen];
  const control = controlOf(status, me, canDrive);
  const mode = control.mine && canDrive ? "control" : "view";
  return (
    <main className="tone-fixed flex h-dvh flex-col gap-1.5 bg-slate-950 p-1.5">
      {/* The window's name for screen readers; the screen's own bar says it to the eye. */}
      <h1 className="sr-only">
        Screen {screen} of {boxTitle(box)}
      </h1>
      {/* Made a viewer while here (maybe holding control): say why Take over went, as the box page does. */}
      {access?.kind === "role" ? (
        <Alert tone="info">
          Your role in {workspaceName} is now {access.role}.
        </Alert>
      ) : null}
      <ScreenControl
        control={control}
        status={status}
        screen={screen}
        csrf={csrf}
        canDrive={canDrive}
        ready={box.state === "ready"}
        action={`/boxes/${encodeURIComponent(box.id)}`}
        compact
      />
      <div className="min-h-0 flex-1">
        <ScreenFrame box={box} screen={screen} mode={mode} onClipboard={() => undefined} popOut={false} fill />
      </div>
    </main>
  );
}
