import { useActionData } from "react-router";
import { OkOrError, fieldError, useActionBanner, useAnswerCount } from "~/components/action-banner";
import { CopyButton } from "~/components/copy-button";
import { PostForm } from "~/components/post-form";
import { Shell } from "~/components/shell";
import { Table } from "~/components/table";
import { Button, Card, Field, when } from "~/components/ui";
import { requireFormWorkspace, requireWorkspace } from "~/edge/console.server";
import { field, formAction, formFields } from "~/edge/form.server";
import { createKey, listKeys, revokeKey } from "~/models/key.server";
import { ApiError } from "~/utils/api-error.server";
import { publicUrl } from "~/utils/env.server";
import type { Route } from "./+types/keys";

export const meta: Route.MetaFunction = () => [{ title: "API keys · holm" }];

export async function loader({ request }: Route.LoaderArgs) {
  const ctx = await requireWorkspace(request);
  return {
    pageWorkspace: ctx.workspace.id,
    csrf: ctx.csrf,
    role: ctx.workspace.role,
    workspace: ctx.workspace.name,
    base: publicUrl(),
    keys: await listKeys(ctx.workspace.id),
  };
}

export async function action({ request }: Route.ActionArgs) {
  return formAction(async () => {
    const form = await request.formData();
    const ctx = await requireFormWorkspace(request, form, "member");
    if (field(form, "intent") === "revoke") {
      await revokeKey(ctx.workspace.id, field(form, "id"));
      // Its Revoke button, which had the focus, is gone: the banner takes it.
      return { ok: "Key revoked. Requests with it are refused from now on.", focus: true };
    }
    const days = field(form, "expires_days");
    let expiresAtMs: number | null = null;
    if (days) {
      const n = Number(days);
      if (!Number.isInteger(n) || n < 1 || n > 3650) throw new ApiError("bad_request", "expiry is 1 to 3650 days");
      expiresAtMs = Date.now() + n * 24 * 3600 * 1000;
    }
    // A name another active key has is refused at the Name field.
    return formFields({ name: "name" }, async () => {
      const { secret, key } = await createKey({ workspaceId: ctx.workspace.id, name: field(form, "name"), createdBy: ctx.user.id, expiresAtMs });
      return { created: { secret, name: key.name } };
    });
  });
}

export default function Keys({ loaderData }: Route.ComponentProps) {
  const answer = useActionData<typeof action>();
  // A revoke's message goes by itself; a new key's card stays until the next action or page.
  const { shown, dismiss } = useActionBanner(answer, { okMs: 10_000 });
  // The form starts empty again after each key made.
  const made = useAnswerCount(answer, (a) => "created" in a);
  const { keys, csrf, base, role, workspace } = loaderData;
  const canEdit = role !== "viewer";
  const created = shown && "created" in shown ? shown.created : null;
  const curl = created
    ? `curl -fsS ${base}/v1/boxes -H 'authorization: Bearer ${created.secret}' -H 'content-type: application/json' -d '{}'`
    : "";
  return (
    <Shell>
      <h1 className="mb-6 text-2xl font-semibold tracking-tight">API keys for {workspace}</h1>
      <div className="space-y-6">
        <OkOrError shown={shown} dismiss={dismiss} />
        {created ? (
          // It takes the focus: the form whose button had it starts anew.
          <Card title={`Key “${created.name}” created`} focus={shown}>
            <p className="text-sm text-slate-600">Copy it now: it is shown once and stored only as a hash.</p>
            <div className="mt-3 flex items-center gap-2">
              <code data-testid="new-key" className="flex-1 break-all rounded-md bg-slate-900 px-3 py-2 font-mono text-xs text-emerald-200">
                {created.secret}
              </code>
              <CopyButton text={created.secret} label="Copy key" />
            </div>
            <p className="mt-4 text-sm text-slate-600">Launch a box with it:</p>
            <div className="mt-2 flex items-start gap-2">
              <pre className="flex-1 overflow-x-auto rounded-md bg-slate-900 px-3 py-2 text-xs text-slate-100">{curl}</pre>
              <CopyButton text={curl} />
            </div>
          </Card>
        ) : null}
        {canEdit ? (
          <Card title="Create a key">
            <PostForm key={`create-${made}`} csrf={csrf} intent="create" className="grid gap-3 sm:grid-cols-[1fr_12rem_auto] sm:items-end">
              <Field label="Name" name="name" required maxLength={80} placeholder="my agent" error={fieldError(shown, "name")} />
              <Field label="Expires after (days)" name="expires_days" type="number" min={1} max={3650} placeholder="never" />
              <Button type="submit">Create key</Button>
            </PostForm>
          </Card>
        ) : null}
        <Card title="Keys">
          {keys.length === 0 ? (
            <p className="text-sm text-slate-600">No keys yet. A key lets an agent use /v1 as this workspace.</p>
          ) : (
            <Table caption="API keys" columns={["Name", "Key", "Created by", "Created", "Last used", "Expires"]} cell="py-2 pr-4" actions>
              {keys.map((k) => {
                const status = k.revoked_at_ms ? "revoked" : k.expires_at_ms && k.expires_at_ms < Date.now() ? "expired" : "active";
                return (
                  <tr key={k.id} className={status === "active" ? "" : "text-slate-600"}>
                    <td className="py-2 pr-4">{k.name}</td>
                    <td className="py-2 pr-4 font-mono text-xs">{k.prefix}…</td>
                    <td className="py-2 pr-4 break-words" title={k.creator_email ?? undefined}>{k.creator}</td>
                    <td className="py-2 pr-4">{when(k.created_at_ms)}</td>
                    <td className="py-2 pr-4">{when(k.last_used_ms)}</td>
                    <td className="py-2 pr-4">{k.expires_at_ms ? when(k.expires_at_ms) : "never"}</td>
                    <td className="py-2 text-right">
                      {status === "active" && canEdit ? (
                        <PostForm csrf={csrf} intent="revoke" fields={{ id: k.id }} confirm={{ title: `Revoke ${k.name}?`, body: "Agents using it stop at once: open viewer, CDP and MCP connections made with it close.", action: "Revoke key" }}>
                          <Button type="submit" variant="danger" aria-label={`Revoke ${k.name}`}>Revoke</Button>
                        </PostForm>
                      ) : (
                        <span className="text-xs">{status}</span>
                      )}
                    </td>
                  </tr>
                );
              })}
            </Table>
          )}
        </Card>
      </div>
    </Shell>
  );
}
