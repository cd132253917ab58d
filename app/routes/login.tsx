import { Form, redirect, useActionData, useNavigation, useSearchParams } from "react-router";
import { Alert, Button, Field } from "~/components/ui";
import { getConsole, startSessionHeaders } from "~/edge/console.server";
import { field, formAction } from "~/edge/form.server";
import { safeNext } from "~/edge/next-path.server";
import { createSession } from "~/models/session.server";
import { guessesByAccount as byAccount, guessesByAddress as byAddress, tooManyGuesses } from "~/models/login-limits.server";
import { checkCredentials, normalizeEmail, userCount } from "~/models/user.server";
import { workspacesOf } from "~/models/workspace.server";
import { ApiError } from "~/utils/api-error.server";
import type { Route } from "./+types/login";

export const meta: Route.MetaFunction = () => [{ title: "Log in · holm" }];

export async function loader({ request }: Route.LoaderArgs) {
  if (await getConsole(request)) throw redirect(safeNext(new URL(request.url).searchParams.get("next")));
  if ((await userCount()) === 0) throw redirect("/signup");
  return null;
}

export async function action({ request, context }: Route.ActionArgs) {
  return formAction(async () => {
    const form = await request.formData();
    const email = normalizeEmail(field(form, "email"));
    const address = (context as { remoteAddress?: string }).remoteAddress ?? "unknown";
    // Each attempt is counted before the password is checked, so parallel guesses cannot slip
    // past the limit; a success gives its attempt back, so people logging in often are never
    // locked out.
    const wait = Math.max(...(await Promise.all([byAddress.hit(address), byAccount.hit(email)])));
    if (wait) throw tooManyGuesses(wait);
    const user = await checkCredentials(email, field(form, "password"));
    if (!user) throw new ApiError("unauthorized", "the email or password is not right");
    await Promise.all([byAddress.refund(address), byAccount.reset(email)]);
    const first = (await workspacesOf(user.id))[0];
    const { token, session } = await createSession(user.id, first?.id ?? null);
    throw redirect(safeNext(field(form, "next")), { headers: startSessionHeaders(request, token, session.expires_at_ms) });
  });
}

export default function Login() {
  const result = useActionData<typeof action>();
  const busy = useNavigation().state !== "idle";
  const [params] = useSearchParams();
  return (
    <div className="mx-auto mt-16 max-w-sm px-4">
      <h1 className="text-2xl font-semibold tracking-tight">Log in to holm</h1>
      <Form method="post" className="mt-6 space-y-4">
        <input type="hidden" name="next" value={params.get("next") ?? "/"} />
        {params.get("ended") === "action" && !result ? (
          <Alert tone="info">You were signed out, so what you just did was not done. Log in, then do it again.</Alert>
        ) : null}
        {/* The Log in button was disabled while it checked, which dropped the focus: the answer takes it. */}
        {result && "error" in result ? <Alert focus={result}>{result.error}</Alert> : null}
        <Field label="Email" name="email" type="email" autoComplete="email" required />
        <Field label="Password" name="password" type="password" autoComplete="current-password" required />
        <Button type="submit" disabled={busy} className="w-full">
          {busy ? "Checking…" : "Log in"}
        </Button>
      </Form>
    </div>
  );
}
