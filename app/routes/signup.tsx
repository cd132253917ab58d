import { Form, redirect, useActionData, useNavigation } from "react-router";
import { fieldError } from "~/components/action-banner";
import { Alert, Button, Field } from "~/components/ui";
import { getConsole, startSessionHeaders } from "~/edge/console.server";
import { field, formAction, formFields } from "~/edge/form.server";
import { createSession } from "~/models/session.server";
import { FIRST_ACCOUNT_REFUSAL, firstAccountByToken, mayAdminister, signUp } from "~/models/signup.server";
import { signupsOpen, userCount } from "~/models/user.server";
import { findInvitation } from "~/models/workspace.server";
import { ApiError, badRequest } from "~/utils/api-error.server";
import type { Route } from "./+types/signup";

export const meta: Route.MetaFunction = () => [{ title: "Sign up · holm" }];

async function mode(invite: string | null) {
  const first = (await userCount()) === 0;
  const invitation = invite ? await findInvitation(invite) : undefined;
  return { first, open: first || (await signupsOpen()), invitation };
}

const peer = (context: unknown) => (context as { remoteAddress?: string }).remoteAddress;

export async function loader({ request, context }: Route.LoaderArgs) {
  if (await getConsole(request)) throw redirect("/");
  const invite = new URL(request.url).searchParams.get("invite");
  const m = await mode(invite);
  // Not at the machine, the first account needs the server token, or cannot be made from here.
  const needsToken = m.first && !mayAdminister(peer(context), request.headers, "");
  return {
    first: m.first,
    open: m.open && (!needsToken || firstAccountByToken()),
    needsToken,
    invite: m.invitation ? { token: invite, email: m.invitation.email, workspace: m.invitation.workspace_name, role: m.invitation.role } : null,
    // A link that no longer works (used, revoked, renewed, expired) says so rather than nothing.
    staleInvite: invite !== null && !m.invitation,
  };
}

export async function action({ request, context }: Route.ActionArgs) {
  return formAction(async () => {
    const form = await request.formData();
    const invite = field(form, "invite") || null;
    const m = await mode(invite);
    if (!m.open && !m.invitation) throw new ApiError("denied", "sign-up is by invitation on this server");
    const admin = mayAdminister(peer(context), request.headers, field(form, "setup_token"));
    if (m.first && !admin) throw new ApiError("denied", FIRST_ACCOUNT_REFUSAL);
    // A refusal about a field is said at it; any other (an address with an account) in the banner.
    const { user, workspaceId } = await formFields({ user_name: "name", email: "email", confirm: "confirm" }, async () => {
      const email = field(form, "email");
      if (!/^[^\s@]+@[^\s@]+$/.test(email)) throw badRequest("enter an email address", "email");
      if (field(form, "password") !== field(form, "confirm")) throw badRequest("the passwords differ", "confirm");
      return signUp({ email, name: field(form, "name"), password: field(form, "password"), invite: m.invitation ? invite : null, workspace: field(form, "workspace"), mayAdminister: admin });
    });
    const { token, session } = await createSession(user.id, workspaceId);
    throw redirect("/", { headers: startSessionHeaders(request, token, session.expires_at_ms) });
  });
}

export default function Signup({ loaderData }: Route.ComponentProps) {
  const result = useActionData<typeof action>();
  const busy = useNavigation().state !== "idle";
  const { first, open, needsToken, invite, staleInvite } = loaderData;
  return (
    <div className="mx-auto mt-16 max-w-sm px-4">
      <h1 className="text-2xl font-semibold tracking-tight">{first ? "Set up holm" : "Create your account"}</h1>
      <p className="mt-1 text-sm text-slate-600">
        {first
          ? "You are the first person here: your account will administer this server."
          : invite
            ? `You are invited to ${invite.workspace} as ${invite.role}.`
            : "Boxes are isolated desktops that agents drive and people watch."}
      </p>
      {staleInvite ? (
        <div className="mt-6">
          <Alert tone="info">This invitation link no longer works: it was used, revoked or replaced by a new link, or it expired.</Alert>
        </div>
      ) : null}
      {first && needsToken && !open ? (
        <div className="mt-6">
          <Alert tone="info">
            The first account administers this server, so it is made from the machine itself: open this page at its loopback address (for example through an SSH
            tunnel), or set HOLM_SERVER_TOKEN and give it here.
          </Alert>
        </div>
      ) : !open && !invite ? (
        <div className="mt-6">
          <Alert tone="info">Sign-up on this server is by invitation. Ask a workspace owner for a link.</Alert>
          <p className="mt-4 text-sm">
            <a className="text-indigo-700 underline" href="/login">
              Log in
            </a>
          </p>
        </div>
      ) : (
        <Form method="post" className="mt-6 space-y-4">
          {invite ? <input type="hidden" name="invite" value={invite.token ?? ""} /> : null}
          {/* The Create account button was disabled while it worked, which dropped the focus: a
              refusal at a field takes it there, any other to this banner. */}
          {result && "error" in result && !("field" in result && result.field) ? <Alert focus={result}>{result.error}</Alert> : null}
          <Field label="Name" name="name" autoComplete="name" required maxLength={80} error={fieldError(result, "name")} />
          <Field label="Email" name="email" type="email" autoComplete="email" required defaultValue={invite?.email} readOnly={!!invite} error={fieldError(result, "email")} />
          <Field label="Password" name="password" type="password" autoComplete="new-password" minLength={10} required hint="At least 10 characters." />
          <Field label="Confirm password" name="confirm" type="password" autoComplete="new-password" minLength={10} required error={fieldError(result, "confirm")} />
          {!invite ? <Field label="Workspace name" name="workspace" placeholder="My team" /> : null}
          {needsToken ? (
            <Field
              label="Server token"
              name="setup_token"
              type="password"
              autoComplete="off"
              required
              hint="This server's HOLM_SERVER_TOKEN: the first account administers the server, and you are not at its machine."
            />
          ) : null}
          <Button type="submit" disabled={busy} className="w-full">
            {busy ? "Creating…" : "Create account"}
          </Button>
          {!first ? (
            <p className="text-center text-sm text-slate-600">
              Have an account?{" "}
              <a className="text-indigo-700 underline" href={invite ? `/login?next=${encodeURIComponent(`/invite/${invite.token}`)}` : "/login"}>
                Log in
              </a>
            </p>
          ) : null}
        </Form>
      )}
    </div>
  );
}
