import { redirect } from "react-router";
import { requireConsole, requireCsrf } from "~/edge/console.server";
import { formAction } from "~/edge/form.server";
import { safeNext } from "~/edge/next-path.server";
import { setSessionWorkspace } from "~/models/session.server";
import { ApiError } from "~/utils/api-error.server";
import type { Route } from "./+types/workspace-switch";

export async function action({ request }: Route.ActionArgs) {
  const ctx = await requireConsole(request);
  return formAction(async () => {
    const form = await request.formData();
    requireCsrf(form, ctx);
    const id = String(form.get("workspace") ?? "");
    if (!ctx.workspaces.some((w) => w.id === id)) throw new ApiError("not_found", "no such workspace of yours");
    await setSessionWorkspace(ctx.session.id, id);
    throw redirect(backTo(request.headers.get("referer")));
  });
}

/**
 * Back to the page the switcher was on. Only its path, and through the same check as a log-in's
 * `next`: a path such as `//host/…` would send the browser to another site.
 */
function backTo(referer: string | null): string {
  if (!referer) return "/";
  try {
    return safeNext(new URL(referer).pathname);
  } catch {
    return "/";
  }
}

export async function loader() {
  throw redirect("/");
}
