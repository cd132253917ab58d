import { useActionData } from "react-router";
import { PostForm } from "~/components/post-form";
import { Shell } from "~/components/shell";
import { Table } from "~/components/table";
import { Alert, Button, Card, Field, when } from "~/components/ui";
import { requireCsrf, requireWorkspace } from "~/edge/console.server";
import { field, formAction } from "~/edge/form.server";
import { ROLES, type Role, atLeast } from "~/models/roles";
import { changeRole, invite, membersOf, pendingInvitations, removeMember } from "~/models/workspace.server";
import { ApiError } from "~/utils/api-error.server";
import { publicUrl } from "~/utils/env.server";
import type { Route } from "./+types/members";

export const meta: Route.MetaFunction = () => [{ title: "Members · holm" }];

function parseRole(v: string): Role {
  if (!(ROLES as readonly string[]).includes(v)) throw new ApiError("bad_request", "pick a role");
  return v as Role;
}

export async function loader({ request }: Route.LoaderArgs) {
  const ctx = await requireWorkspace(request);
  return {
    me: ctx.user.id,
    role: ctx.workspace.role,
    workspace: ctx.workspace.name,
    csrf: ctx.csrf,
    members: await membersOf(ctx.workspace.id),
    invitations: atLeast(ctx.workspace.role, "admin") ? await pendingInvitations(ctx.workspace.id) : [],
  };
}

export async function action({ request }: Route.ActionArgs) {
  return formAction(async () => {
    const ctx = await requireWorkspace(request);
    const form = await request.formData();
    requireCsrf(form, ctx);
    const ws = ctx.workspace;
    switch (field(form, "intent")) {
      case "invite": {
        const email = field(form, "email");
        if (!/^[^\s@]+@[^\s@]+$/.test(email)) throw new ApiError("bad_request", "enter an email address");
        const { token } = await invite(ws.id, ws.role, ctx.user.id, email, parseRole(field(form, "role")));
        return { invited: email, link: `${publicUrl()}/invite/${token}` };
      }
      case "role":
        await changeRole(ws.id, ws.role, field(form, "user"), parseRole(field(form, "role")));
        return { ok: "Role changed." };
      case "remove":
        await removeMember(ws.id, ws.role, field(form, "user"));
        return { ok: "Member removed." };
      default:
        throw new ApiError("bad_request", "unknown action");
    }
  });
}

export default function Members({ loaderData }: Route.ComponentProps) {
  const result = useActionData<typeof action>();
  const { members, role, csrf, me, invitations, workspace } = loaderData;
  const manage = atLeast(role, "admin");
  return (
    <Shell>
      <h1 className="mb-6 text-2xl font-semibold tracking-tight">Members of {workspace}</h1>
      <div className="space-y-6">
        {result && "error" in result ? <Alert>{result.error}</Alert> : null}
        {result && "ok" in result ? <Alert tone="success">{result.ok}</Alert> : null}
        {result && "link" in result ? (
          <Alert tone="success">
            Invitation for {result.invited}. Send them this link (shown once):{" "}
            <code className="break-all font-mono text-xs" data-testid="invite-link">
              {result.link}
            </code>
          </Alert>
        ) : null}
        <Card title="People">
          <Table caption="Members" columns={["Name", "Email", "Role"]} cell="py-2" actions>
            {members.map((m) => (
              <tr key={m.user_id}>
                <td className="py-2">{m.name}{m.user_id === me ? " (you)" : ""}</td>
                <td className="py-2 text-slate-600">{m.email}</td>
                <td className="py-2">
                  {manage ? (
                    <PostForm csrf={csrf} intent="role" fields={{ user: m.user_id }} className="flex items-center gap-2">
                      <label className="sr-only" htmlFor={`role-${m.user_id}`}>Role of {m.email}</label>
                      <select id={`role-${m.user_id}`} name="role" defaultValue={m.role} className="rounded-md border border-slate-300 px-2 py-1 text-sm">
                        {ROLES.map((r) => <option key={r} value={r}>{r}</option>)}
                      </select>
                      <Button type="submit" variant="secondary">Save</Button>
                    </PostForm>
                  ) : (
                    m.role
                  )}
                </td>
                <td className="py-2 text-right">
                  {manage ? (
                    <PostForm csrf={csrf} intent="remove" fields={{ user: m.user_id }} confirm={{ title: `Remove ${m.name} from ${workspace}?`, body: `${m.email} loses access to its boxes at once; a screen they hold is given back.`, action: "Remove member" }}>
                      <Button type="submit" variant="danger" aria-label={`Remove ${m.email}`}>Remove</Button>
                    </PostForm>
                  ) : null}
                </td>
              </tr>
            ))}
          </Table>
        </Card>
        {manage ? (
          <Card title="Invite someone">
            <PostForm csrf={csrf} intent="invite" className="grid gap-3 sm:grid-cols-[1fr_10rem_auto] sm:items-end">
              <Field label="Email" name="email" type="email" required />
              <div className="text-sm">
                <label htmlFor="invite-role" className="block font-medium text-slate-700">Role</label>
                <select id="invite-role" name="role" defaultValue="member" className="mt-1 block w-full rounded-md border border-slate-300 px-2 py-1.5 text-sm">
                  {ROLES.filter((r) => role === "owner" || r !== "owner").map((r) => <option key={r} value={r}>{r}</option>)}
                </select>
              </div>
              <Button type="submit">Create invitation</Button>
            </PostForm>
            {invitations.length ? (
              <ul className="mt-4 space-y-1 text-sm text-slate-600">
                {invitations.map((i) => (
                  <li key={`${i.email}-${i.created_at_ms}`}>Pending: {i.email} as {i.role}, until {when(Number(i.expires_at_ms))}</li>
                ))}
              </ul>
            ) : null}
          </Card>
        ) : (
          <p className="text-sm text-slate-600">Only owners and admins invite and manage members.</p>
        )}
      </div>
    </Shell>
  );
}
