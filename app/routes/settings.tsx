import { useMemo } from "react";
import { redirect, useActionData, useSearchParams } from "react-router";
import { PoolCard } from "~/components/pool-card";
import { PostForm } from "~/components/post-form";
import { SecretsCard } from "~/components/secrets-card";
import { Shell } from "~/components/shell";
import { fieldError, useAnswerCount } from "~/components/action-banner";
import { Alert, Button, Card, Field } from "~/components/ui";
import { requireConsole, requireCsrf, requireFormWorkspace, startSessionHeaders } from "~/edge/console.server";
import { field, formAction, formFields } from "~/edge/form.server";
import { poolStatus } from "~/models/pool-status.server";
import { atLeast } from "~/models/roles";
import { deleteSecret, listSecrets, putSecret } from "~/models/secret-store.server";
import { createSession } from "~/models/session.server";
import { guessesAtChange, tooManyGuesses } from "~/models/login-limits.server";
import { changePassword, setSetting, signupsOpen } from "~/models/user.server";
import { ApiError, badRequest } from "~/utils/api-error.server";
import type { Route } from "./+types/settings";

export const meta: Route.MetaFunction = () => [{ title: "Settings · holm" }];

export async function loader({ request }: Route.LoaderArgs) {
  const ctx = await requireConsole(request);
  const w = ctx.workspace;
  return {
    // The secrets card's forms act in this workspace, whatever another tab switches to meanwhile.
    pageWorkspace: w?.id,
    csrf: ctx.csrf,
    admin: ctx.user.is_admin,
    signupsOpen: await signupsOpen(),
    // The warm pool is the server's, so only its administrator sees it.
    pool: ctx.user.is_admin ? await poolStatus() : null,
    // The current workspace's secrets (names and dates only).
    secrets: w ? { workspace: w.name, canEdit: atLeast(w.role, "member"), list: await listSecrets(w.id) } : null,
  };
}

export async function action({ request }: Route.ActionArgs) {
  return formAction(async () => {
    const form = await request.formData();
    const intent = field(form, "intent");
    if (intent === "secret-put" || intent === "secret-delete") {
      // In the workspace the card showed (page_workspace), as /v1/secrets: the member role.
      const w = (await requireFormWorkspace(request, form, "member")).workspace;
      const name = field(form, "name");
      // Its row and Delete button, or the form drawn afresh after a save, took the focus away:
      // the answer takes it (`focus`).
      if (intent === "secret-delete") {
        await deleteSecret(w.id, name);
        return { ok: `Secret “${name}” deleted.`, focus: true as const };
      }
      // A refused value is said at its field, with what was typed kept.
      await formFields({ value: "value" }, () => putSecret(w.id, name, field(form, "value")));
      return { ok: `Secret “${name}” saved.`, savedAtMs: Date.now(), focus: true as const };
    }
    // The account's own settings and the server's: no workspace.
    const ctx = await requireConsole(request);
    requireCsrf(form, ctx);
    if (intent === "signups") {
      if (!ctx.user.is_admin) throw new ApiError("denied", "only the server's administrator changes this");
      await setSetting("signups_open", field(form, "open") === "true" ? "true" : "false");
      return { ok: "Saved." };
    }
    const account = ctx.user.id;
    // A wrong current password is said at its field, differing new ones at the confirmation.
    await formFields({ current: "current", confirm: "confirm" }, async () => {
      if (field(form, "next") !== field(form, "confirm")) throw badRequest("the new passwords differ", "confirm");
      // The current password is a guess like a log-in's (login-limits.server.ts): counted before it
      // is checked; anything but a wrong one gives the attempt back.
      const wait = await guessesAtChange.hit(account);
      if (wait) throw tooManyGuesses(wait);
      try {
        // Every session of the account ends, this one included; a fresh one replaces it.
        await changePassword(ctx.user.id, field(form, "current"), field(form, "next"));
      } catch (err) {
        if (!(err instanceof ApiError && err.at === "current")) await guessesAtChange.refund(account);
        throw err;
      }
    });
    await guessesAtChange.reset(account);
    const { token, session } = await createSession(ctx.user.id, ctx.session.workspace_id);
    // `changed` names this change: the page draws the password form afresh for it (so no password
    // stays typed in the page) and its answer takes the focus, once.
    throw redirect(`/settings?changed=${Date.now()}`, { headers: startSessionHeaders(request, token, session.expires_at_ms) });
  });
}

export default function Settings({ loaderData }: Route.ComponentProps) {
  const result = useActionData<typeof action>();
  const { csrf, admin, signupsOpen: open, secrets, pool } = loaderData;
  // The secrets form is drawn afresh after each save only: a refusal keeps what was typed.
  const saves = useAnswerCount(result, (a) => "savedAtMs" in a);
  const changedAt = useSearchParams()[0].get("changed");
  const changed = useMemo(() => (changedAt ? { at: changedAt } : undefined), [changedAt]);
  return (
    <Shell>
      <h1 className="mb-6 text-2xl font-semibold tracking-tight">Settings</h1>
      <div className="grid max-w-3xl gap-6">
        {/* A refusal at a password field is said there; any other here. */}
        {result && "error" in result && !("field" in result && result.field) ? <Alert focus={"focus" in result ? result : undefined}>{result.error}</Alert> : null}
        {changed ? <Alert tone="success" focus={changed}>Password changed. Every other session was signed out.</Alert> : null}
        {result && "ok" in result ? <Alert tone="success" focus={"focus" in result ? result : undefined}>{result.ok}</Alert> : null}
        <Card title="Change password">
          <PostForm key={changedAt ?? ""} csrf={csrf} intent="password" className="space-y-3">
            <Field label="Current password" name="current" type="password" autoComplete="current-password" required error={fieldError(result, "current")} />
            <Field label="New password" name="next" type="password" autoComplete="new-password" minLength={10} required />
            <Field label="Confirm new password" name="confirm" type="password" autoComplete="new-password" minLength={10} required error={fieldError(result, "confirm")} />
            <Button type="submit">Change password</Button>
          </PostForm>
        </Card>
        {secrets ? (
          <SecretsCard
            csrf={csrf}
            workspace={secrets.workspace}
            secrets={secrets.list}
            canEdit={secrets.canEdit}
            valueError={fieldError(result, "value")}
            formKey={String(saves)}
          />
        ) : null}
        {admin ? (
          <Card title="Server">
            <PostForm csrf={csrf} intent="signups" className="flex items-center gap-3">
              <label className="flex items-center gap-2 text-sm">
                <input type="checkbox" name="open" value="true" defaultChecked={open} />
                Anyone who reaches this server may sign up (otherwise by invitation)
              </label>
              <Button type="submit" variant="secondary">Save</Button>
            </PostForm>
          </Card>
        ) : null}
        {pool ? <PoolCard pool={pool} /> : null}
      </div>
    </Shell>
  );
}
