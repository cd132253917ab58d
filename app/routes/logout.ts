import { redirect } from "react-router";
import { endSessionHeaders, getConsole, requireCsrf } from "~/edge/console.server";
import { invalidateSession } from "~/models/session.server";
import type { Route } from "./+types/logout";

export async function action({ request }: Route.ActionArgs) {
  const ctx = await getConsole(request);
  if (ctx) {
    requireCsrf(await request.formData(), ctx);
    await invalidateSession(ctx.session.id);
  }
  throw redirect("/login", { headers: endSessionHeaders(request) });
}

export async function loader() {
  throw redirect("/");
}
