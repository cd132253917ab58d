import { Form, redirect, useActionData } from "react-router";
import { Shell } from "~/components/shell";
import { Alert, Button, Card, CsrfInput } from "~/components/ui";
import { getConsole, requireConsole, requireCsrf } from "~/edge/console.server";
import { formAction } from "~/edge/form.server";
import { setSessionWorkspace } from "~/models/session.server";
import { acceptInvitation, alreadyMember, findInvitation, roleIn } from "~/models/workspace.server";
import type { Route } from "./+types/invite";

export const meta: Route.MetaFunction = () => [{ title: "Invitation · holm" }];

export async function loader({ request, params }: Route.LoaderArgs) {
  const inv = await findInvitation(params.token);
  const ctx = await getConsole(request);
  if (!ctx) {
    // Not signed in: a new person signs up through the invitation.
    throw redirect(`/signup?invite=${encodeURIComponent(params.token)}`);
  }
  // Someone already in the workspace is told so: joining would not change their role.
  const role = inv ? await roleIn(inv.workspace_id, ctx.user.id) : undefined;
  return {
    invitation: inv ? { workspace: inv.workspace_name, role: inv.role, email: inv.email } : null,
    already: inv && role ? alreadyMember(inv.workspace_name, role) : null,
    csrf: ctx.csrf,
    email: ctx.user.email,
  };
}

export async function action({ request, params }: Route.ActionArgs) {
  return formAction(async () => {
    const ctx = await requireConsole(request);
    requireCsrf(await request.formData(), ctx);
    const workspaceId = await acceptInvitation(params.token, ctx.user.id, ctx.user.email);
    await setSessionWorkspace(ctx.session.id, workspaceId);
    throw redirect("/");
  });
}

export default function Invite({ loaderData }: Route.ComponentProps) {
  const result = useActionData<typeof action>();
  const { invitation, already, csrf, email } = loaderData;
  return (
    <Shell>
      <div className="max-w-md">
        <Card title="Invitation">
          {already ? (
            <Alert tone="info">{already}</Alert>
          ) : invitation ? (
            <Form method="post" className="space-y-4">
              <CsrfInput token={csrf} />
              {result && "error" in result ? <Alert>{result.error}</Alert> : null}
              <p className="text-sm">
                Join <strong>{invitation.workspace}</strong> as <strong>{invitation.role}</strong>
                {invitation.email !== email ? ` (the invitation is for ${invitation.email})` : ""}.
              </p>
              <Button type="submit">Join workspace</Button>
            </Form>
          ) : (
            <Alert tone="info">This invitation link no longer works: it was used, revoked or replaced by a new link, or it expired. Ask a workspace owner or admin for a new one.</Alert>
          )}
        </Card>
      </div>
    </Shell>
  );
}
