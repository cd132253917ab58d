import { Link, useActionData } from "react-router";
import { OkOrError, useActionBanner } from "~/components/action-banner";
import { PostForm } from "~/components/post-form";
import { Shell } from "~/components/shell";
import { Table } from "~/components/table";
import { Button, Card, when } from "~/components/ui";
import { requireFormWorkspace, requireWorkspace } from "~/edge/console.server";
import { field, formAction } from "~/edge/form.server";
import { deleteProfile, listProfiles } from "~/models/profile.server";
import { env } from "~/utils/env.server";
import { showBytes } from "~/utils/size";
import type { Route } from "./+types/profiles";

// The workspace's browser profiles (`placement.profile`): which box holds each, how big each was
// when a box last let it go (one over HOLM_PROFILE_MAX_BYTES is refused at launch), and removing
// one (refused while a box holds it, as through /v1).

export const meta: Route.MetaFunction = () => [{ title: "Browser profiles · holm" }];

export async function loader({ request }: Route.LoaderArgs) {
  const ctx = await requireWorkspace(request);
  return { pageWorkspace: ctx.workspace.id, csrf: ctx.csrf, role: ctx.workspace.role, workspace: ctx.workspace.name, profiles: await listProfiles(ctx.workspace.id), maxBytes: env().HOLM_PROFILE_MAX_BYTES };
}

export async function action({ request }: Route.ActionArgs) {
  return formAction(async () => {
    const form = await request.formData();
    const ctx = await requireFormWorkspace(request, form, "member");
    const { name } = await deleteProfile(ctx.workspace.id, field(form, "name"));
    // Its row, which had the focus, is gone: the banner takes it.
    return { ok: `Profile “${name}” removed, with its cookies and storage.`, focus: true };
  });
}

export default function Profiles({ loaderData }: Route.ComponentProps) {
  const answer = useActionData<typeof action>();
  const { shown, dismiss } = useActionBanner(answer);
  const { profiles, csrf, role, workspace, maxBytes } = loaderData;
  const canEdit = role !== "viewer";
  const example = `{"placement": {"profile": "work"}}`;
  return (
    <Shell>
      <h1 className="mb-6 text-2xl font-semibold tracking-tight">Browser profiles for {workspace}</h1>
      <div className="space-y-6">
        <OkOrError shown={shown} dismiss={dismiss} />
        <Card title="Profiles">
          {profiles.length === 0 ? (
            <p className="text-sm text-slate-600">
              No profiles yet. Launch a box with <code className="font-mono text-xs">{example}</code>: its browser keeps logins,
              cookies and storage for the next box with that profile.
            </p>
          ) : (
            <Table caption="Browser profiles" columns={["Name", "Held by", "Size", "Created", "Last used"]} cell="py-2 pr-4" actions>
              {profiles.map((p) => (
                <tr key={p.name}>
                  <td className="py-2 pr-4 font-mono text-xs">{p.name}</td>
                  <td className="py-2 pr-4 break-all">
                    {p.held_by ? (
                      <Link className="font-mono text-xs text-indigo-700 hover:underline" to={`/boxes/${p.held_by}`}>
                        {p.held_by}
                      </Link>
                    ) : p.data_missing ? (
                      // Free with no volume on the engine: a restore (backups keep rows, not volumes).
                      <span>free, no saved data: its next box starts logged out</span>
                    ) : (
                      "free"
                    )}
                  </td>
                  <td className="py-2 pr-4">
                    {p.size_bytes === null ? (
                      <span className="text-slate-500">not measured yet</span>
                    ) : p.size_bytes > maxBytes ? (
                      <span className="text-red-700">{showBytes(p.size_bytes)}: over the {showBytes(maxBytes)} limit; remove it to launch with it again</span>
                    ) : (
                      showBytes(p.size_bytes)
                    )}
                  </td>
                  <td className="py-2 pr-4">{when(p.created_at_ms)}</td>
                  <td className="py-2 pr-4">{when(p.last_used_ms)}</td>
                  <td className="py-2 text-right">
                    {canEdit && !p.held_by ? (
                      <PostForm
                        csrf={csrf}
                        intent="delete"
                        fields={{ name: p.name }}
                        confirm={{ title: `Remove profile ${p.name}?`, body: "Its logins, cookies and storage are deleted for good.", action: "Remove profile" }}
                      >
                        <Button type="submit" variant="danger" aria-label={`Remove profile ${p.name}`}>
                          Remove
                        </Button>
                      </PostForm>
                    ) : (
                      <span className="text-xs">{p.held_by ? "in use" : ""}</span>
                    )}
                  </td>
                </tr>
              ))}
            </Table>
          )}
        </Card>
      </div>
    </Shell>
  );
}
