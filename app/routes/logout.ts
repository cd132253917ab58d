import { redirect } from "react-router";
import { endSessionHeaders, getConsole, requireCsrf } from "~/edge/console.server";
import { formAction } from "~/edge/form.server";
import { invalidateSession } from "~/models/session.server";
import type { Route } from "./+types/logout";

export async function action({ request }: Route.ActionArgs) {
  return formAction(async () => {
    const ctx = await getConsole(request);
    if (ctx) {
      // Without the token (a cross-site form) the session stays: refused with 400, not logged out.
      requireCsrf(await request.formData(), ctx);
      await invalidateSession(ctx.session.id);
    }
    throw redirect("/login", { headers: endSessionHeaders(request) });
  });
}

export async function loader() {
  throw redirect("/");
}
