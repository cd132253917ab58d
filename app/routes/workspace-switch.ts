import { redirect } from "react-router";
import { requireConsole, requireCsrf } from "~/edge/console.server";
import { setSessionWorkspace } from "~/models/session.server";
import { ApiError } from "~/utils/api-error.server";
import type { Route } from "./+types/workspace-switch";

export async function action({ request }: Route.ActionArgs) {
  const ctx = await requireConsole(request);
  const form = await request.formData();
  requireCsrf(form, ctx);
  const id = String(form.get("workspace") ?? "");
  if (!ctx.workspaces.some((w) => w.id === id)) throw new ApiError("not_found", "no such workspace of yours");
  await setSessionWorkspace(ctx.session.id, id);
  const back = request.headers.get("referer");
  const path = back ? new URL(back).pathname : "/";
  throw redirect(path.startsWith("/") ? path : "/");
}

export async function loader() {
  throw redirect("/");
}
