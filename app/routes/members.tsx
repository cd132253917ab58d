import { useActionData } from "react-router";
import { ActionBanner, OkOrError, fieldError, useActionBanner, useAnswerCount } from "~/components/action-banner";
import { CopyButton } from "~/components/copy-button";
import { type PendingInvitation, type PersonKey, MembersTable } from "~/components/members-table";
import { PostForm } from "~/components/post-form";
import { Shell } from "~/components/shell";
import { Button, Card, Field, when } from "~/components/ui";
import { requireFormWorkspace, requireWorkspace } from "~/edge/console.server";
import { field, formAction, formFields } from "~/edge/form.server";
import { listKeys } from "~/models/key.server";
import { ROLES, type Role, atLeast } from "~/models/roles";
import { changeRole, invite, membersOf, pendingInvitations, removeMember, renewInvitation, revokeInvitation } from "~/models/workspace.server";
import { ApiError, badRequest } from "~/utils/api-error.server";
import { publicUrl } from "~/utils/env.server";
import type { Route } from "./+types/members";

// The people of a workspace: who they are, their role (owners and admins change it), when each
// was last seen in the console and the API keys each made; invitations, each with a new link or
// revoke. An invitation's link is shown only when it is made (only a hash of it is kept), with
// Copy; "New link" makes another and stops the old one.

export const meta: Route.MetaFunction = () => [{ title: "Members · holm" }];

function parseRole(v: string): Role {
  if (!(ROLES as readonly string[]).includes(v)) throw new ApiError("bad_request", "pick a role");
  return v as Role;
}

export async function loader({ request }: Route.LoaderArgs) {
  const ctx = await requireWorkspace(request);
  const keys: Record<string, PersonKey[]> = {};
  for (const k of await listKeys(ctx.workspace.id)) {
    const status = k.revoked_at_ms ? "revoked" : k.expires_at_ms && k.expires_at_ms < Date.now() ? "expired" : "active";
    (keys[k.created_by] ??= []).push({ id: k.id, name: k.name, last_used_ms: k.last_used_ms, status });
  }
  return {
    pageWorkspace: ctx.workspace.id,
    me: ctx.user.id,
    role: ctx.workspace.role,
    workspace: ctx.workspace.name,
    csrf: ctx.csrf,
    now: Date.now(),
    members: await membersOf(ctx.workspace.id),
    keys,
    invitations: atLeast(ctx.workspace.role, "admin") ? await pendingInvitations(ctx.workspace.id) : [],
  };
}

const linkOf = (token: string) => `${publicUrl()}/invite/${token}`;

export async function action({ request }: Route.ActionArgs) {
  return formAction(async () => {
    const form = await request.formData();
    const ctx = await requireFormWorkspace(request, form);
    const ws = ctx.workspace;
    switch (field(form, "intent")) {
      case "invite":
        // A refusal about the address is said at its field; any other (the role) in the banner.
        return formFields({ email: "email" }, async () => {
          const email = field(form, "email");
          if (!/^[^\s@]+@[^\s@]+$/.test(email)) throw badRequest("enter an email address", "email");
          const role = parseRole(field(form, "role"));
          const { token } = await invite(ws.id, ws.role, ctx.user.id, email, role);
          return { invited: email, role, link: linkOf(token), renewed: false };
        });
      case "renew": {
        const r = await renewInvitation(ws.id, ws.role, field(form, "invitation"));
        return { invited: r.email, role: r.role, link: linkOf(r.token), renewed: true };
      }
      case "revoke": {
        const r = await revokeInvitation(ws.id, ws.role, field(form, "invitation"));
        // Its row, which had the focus, is gone: the banner takes it.
        return { ok: `Invitation for ${r.email} revoked: its link no longer works.`, focus: true };
      }
      case "role":
        try {
          await changeRole(ws.id, ws.role, field(form, "user"), parseRole(field(form, "role")));
        } catch (e) {
          // Said so, as the select goes back to the role the person still has.
          if (e instanceof ApiError) throw new ApiError(e.code, `The role was not changed: ${e.message}.`);
          throw e;
        }
        return { ok: "Role changed." };
      case "remove":
        await removeMember(ws.id, ws.role, field(form, "user"));
        return { ok: "Member removed.", focus: true };
      default:
        throw new ApiError("bad_request", "unknown action");
    }
  });
}

/** How long a plain "done" message stays (errors and new links stay until the next action). */
const OK_MS = 10_000;

export default function Members({ loaderData }: Route.ComponentProps) {
  const answer = useActionData<typeof action>();
  const { shown, dismiss, answers } = useActionBanner(answer, { okMs: OK_MS });
  // The invite form starts empty again after each invitation made.
  const invites = useAnswerCount(answer, (a) => "link" in a && !a.renewed);
  const { members, role, csrf, me, invitations, workspace, keys, now } = loaderData;
  const manage = atLeast(role, "admin");
  return (
    <Shell>
      <h1 className="mb-6 text-2xl font-semibold tracking-tight break-words">Members of {workspace}</h1>
      <div className="space-y-6">
        <OkOrError shown={shown} dismiss={dismiss} />
        {shown && "link" in shown && shown.link ? (
          // It takes the focus (Copy link is next): the invite form that had it is drawn anew, and
          // so is a renewed invitation's row (a new id).
          <ActionBanner tone="success" onDismiss={dismiss} focus={shown}>
            <p>
              {shown.renewed ? "New link" : "Invitation"} for {shown.invited} as {shown.role}
              {shown.renewed ? " (the old link no longer works)" : ""}. Send them this link; it is shown only now:
            </p>
            <div className="mt-2 flex flex-wrap items-center gap-2">
              <code className="min-w-0 flex-1 break-all font-mono text-xs" data-testid="invite-link">
                {shown.link}
              </code>
              <CopyButton text={shown.link} label="Copy link" />
            </div>
          </ActionBanner>
        ) : null}
        <Card title="People">
          <MembersTable roles={ROLES} members={members} keys={keys} me={me} manage={manage} csrf={csrf} workspace={workspace} now={now} answers={answers} />
        </Card>
        {manage ? (
          <Card title="Invite someone">
            <PostForm key={`invite-${invites}`} csrf={csrf} intent="invite" className="grid gap-3 sm:grid-cols-[1fr_10rem_auto] sm:items-end">
              <Field label="Email" name="email" type="email" required error={fieldError(shown, "email")} />
              <div className="text-sm">
                <label htmlFor="invite-role" className="block font-medium text-slate-700">Role</label>
                <select id="invite-role" name="role" defaultValue="member" className="mt-1 block w-full rounded-md border border-slate-300 px-2 py-1.5 text-sm">
                  {ROLES.filter((r) => role === "owner" || r !== "owner").map((r) => <option key={r} value={r}>{r}</option>)}
                </select>
              </div>
              <Button type="submit">Create invitation</Button>
            </PostForm>
            <Invitations invitations={invitations} csrf={csrf} />
          </Card>
        ) : (
          <p className="text-sm text-slate-600">Only owners and admins invite and manage members.</p>
        )}
      </div>
    </Shell>
  );
}

function Invitations({ invitations, csrf }: { invitations: PendingInvitation[]; csrf: string }) {
  if (!invitations.length) return null;
  return (
    <section className="mt-6" aria-labelledby="pending-title">
      <h3 id="pending-title" className="text-sm font-semibold text-slate-800">Pending invitations</h3>
      <p className="mt-1 text-xs text-slate-600">A link is shown once, when it is made. To send one again, make a new link: the old one stops working.</p>
      <ul className="mt-3 divide-y divide-slate-100 text-sm">
        {invitations.map((i) => (
          <li key={i.id} data-testid="invitation" className="flex flex-wrap items-center gap-x-4 gap-y-2 py-2">
            <div className="min-w-0 flex-1 break-words">
              <span className="font-medium">{i.email}</span> as {i.role}
              <span className="block text-xs text-slate-600">
                Invited by {i.invited_by}; the link works until {when(i.expires_at_ms)}
              </span>
            </div>
            <div className="flex gap-2">
              <PostForm csrf={csrf} intent="renew" fields={{ invitation: i.id }}>
                <Button type="submit" variant="secondary" aria-label={`New link for ${i.email}`}>New link</Button>
              </PostForm>
              <PostForm
                csrf={csrf}
                intent="revoke"
                fields={{ invitation: i.id }}
                confirm={{ title: `Revoke the invitation for ${i.email}?`, body: "Its link stops working at once. You can invite them again later.", action: "Revoke invitation" }}
              >
                <Button type="submit" variant="danger" aria-label={`Revoke the invitation for ${i.email}`}>Revoke</Button>
              </PostForm>
            </div>
          </li>
        ))}
      </ul>
    </section>
  );
}
