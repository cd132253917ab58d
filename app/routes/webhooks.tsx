import { useEffect } from "react";
import { useActionData, useRevalidator } from "react-router";
import { OkOrError, fieldError, useActionBanner, useAnswerCount } from "~/components/action-banner";
import { CopyButton } from "~/components/copy-button";
import { PostForm } from "~/components/post-form";
import { Shell } from "~/components/shell";
import { Button, Card, Field, duration, when } from "~/components/ui";
import { WebhookCard } from "~/components/webhook-card";
import { requireFormWorkspace, requireWorkspace } from "~/edge/console.server";
import { field, formAction, formFields } from "~/edge/form.server";
import { atLeast } from "~/models/roles";
import { listDeliveries, replayDelivery } from "~/models/webhook-delivery.server";
import { createWebhook, deleteWebhook, listWebhooks, rotateWebhookSecret, updateWebhook } from "~/models/webhook.server";
import { WebhookCreateSchema, WebhookPatchSchema } from "~/protocol/api-webhook";
import { WEBHOOK_EVENT_KINDS } from "~/protocol/webhook-events";
import { ApiError, badRequest } from "~/utils/api-error.server";
import { validate } from "~/utils/validate.server";
import type { Route } from "./+types/webhooks";

// The workspace's webhooks in the console (docs/decisions/0018): the same model as /v1/webhooks.
// Members manage them (as they manage keys); a viewer sees that they exist, not their URLs. A new
// webhook's secret is shown once, in the answer to its create, and never again.

export const meta: Route.MetaFunction = () => [{ title: "Webhooks · holm" }];

/** How long the previous secret signs after a rotation from the console (/v1's default). */
const ROTATE_GRACE_SECS = 24 * 3600;

/** Deliveries shown per webhook; /v1 gives up to 200. */
const SHOWN = 10;

export async function loader({ request }: Route.LoaderArgs) {
  const ctx = await requireWorkspace(request);
  const canEdit = atLeast(ctx.workspace.role, "member");
  const hooks = canEdit ? await listWebhooks(ctx.workspace.id) : [];
  return {
    pageWorkspace: ctx.workspace.id,
    csrf: ctx.csrf,
    workspace: ctx.workspace.name,
    canEdit,
    hooks: await Promise.all(hooks.map(async (h) => ({ ...h, deliveries: await listDeliveries(ctx.workspace.id, h.id, SHOWN) }))),
  };
}

export async function action({ request }: Route.ActionArgs) {
  return formAction(async () => {
    const form = await request.formData();
    const ctx = await requireFormWorkspace(request, form);
    if (!atLeast(ctx.workspace.role, "member")) throw new ApiError("denied", "a viewer cannot change the workspace's webhooks");
    const owner = ctx.workspace.id;
    const intent = field(form, "intent");
    const id = field(form, "id");
    if (intent === "create") {
      // A refusal of the URL is said at its field; the events' or the count's in the banner.
      return formFields({ url: "url" }, async () => {
        const events = form.getAll("events").filter((v): v is string => typeof v === "string");
        const body = validate(WebhookCreateSchema, { url: field(form, "url"), events: events.includes("*") ? ["*"] : events }, "form");
        const made = await createWebhook(owner, `user:${ctx.user.id}`, body);
        return { created: { url: made.url, secret: made.secret } };
      });
    }
    if (intent === "enable" || intent === "disable") {
      await updateWebhook(owner, id, { enabled: intent === "enable" });
      return { ok: intent === "enable" ? "Webhook enabled." : "Webhook disabled: nothing is sent to it until it is enabled again." };
    }
    if (intent === "rotate") {
      // The console rotates with the default window: the previous secret signs for 24 h more.
      const rotated = await rotateWebhookSecret(owner, id, ROTATE_GRACE_SECS);
      return { rotated: { url: rotated.url, secret: rotated.secret } };
    }
    if (intent === "delete") {
      await deleteWebhook(owner, id);
      // Its card, which had the focus, is gone: the banner takes it.
      return { ok: "Webhook deleted, with its delivery log.", focus: true };
    }
    if (intent === "edit") {
      // The URL and events in place (PATCH's model): a refusal is said at the field it is about.
      return formFields({ url: "url", events: "events" }, async () => {
        const events = form.getAll("events").filter((v): v is string => typeof v === "string");
        if (events.length === 0) throw badRequest("events: tick at least one event, or all events", "events");
        const body = validate(WebhookPatchSchema, { url: field(form, "url"), events: events.includes("*") ? ["*"] : events }, "form");
        await updateWebhook(owner, id, body);
        return { ok: "Webhook saved." };
      });
    }
    if (intent === "replay") {
      const asked = Date.now();
      const d = await replayDelivery(owner, id, field(form, "delivery"));
      // While a delivery of that event is pending, the answer is that one and nothing is added
      // (README): it is sent at its own next try, not now. Only a row made by this call is new.
      if (d.created_at_ms < asked) {
        const next = d.next_attempt_at_ms;
        // A pending delivery with no next try is only ever a held one: its webhook is disabled.
        const at = next ? `next try at ${when(next)}${next > asked ? ` (in ${duration(next - asked)})` : ""}` : "held until the webhook is enabled";
        return { ok: `Already pending: ${d.kind} #${d.event_seq} is still pending, ${at}; nothing new is queued.` };
      }
      if (d.next_attempt_at_ms === null) return { ok: "Replay queued: the webhook is disabled, so it is held until the webhook is enabled, then sent." };
      return { ok: "Replay queued: the same event is sent again now." };
    }
    throw new ApiError("bad_request", `unknown intent "${intent}"`);
  });
}

export default function Webhooks({ loaderData }: Route.ComponentProps) {
  const answer = useActionData<typeof action>();
  const { shown, dismiss } = useActionBanner(answer, { okMs: 10_000 });
  const made = useAnswerCount(answer, (a) => "created" in a);
  const rotated = shown && "rotated" in shown ? shown.rotated : null;
  const { csrf, workspace, canEdit, hooks } = loaderData;
  const created = shown && "created" in shown ? shown.created : null;
  const revalidator = useRevalidator();
  // The delivery log moves by itself (retries, replays): read it again every few seconds.
  useEffect(() => {
    if (hooks.length === 0) return;
    const timer = setInterval(() => {
      if (document.visibilityState === "visible" && revalidator.state === "idle") void revalidator.revalidate();
    }, 4000);
    return () => clearInterval(timer);
  }, [hooks.length, revalidator]);
  return (
    <Shell>
      <h1 className="mb-6 text-2xl font-semibold tracking-tight">Webhooks for {workspace}</h1>
      <div className="space-y-6">
        <OkOrError shown={shown} dismiss={dismiss} />
        {created ? (
          // It takes the focus: the form whose button had it starts anew.
          <Card title="Webhook created" focus={shown}>
            <p className="text-sm text-slate-600">
              Copy its signing secret now: it is shown once and stored encrypted. Each delivery carries{" "}
              <code>Holm-Signature: t=…,v1=…</code>, the HMAC-SHA256 of <code>t.body</code> under this secret.
            </p>
            <div className="mt-3 flex items-center gap-2">
              <code data-testid="new-secret" className="flex-1 break-all rounded-md bg-slate-900 px-3 py-2 font-mono text-xs text-emerald-200">
                {created.secret}
              </code>
              <CopyButton text={created.secret} label="Copy secret" />
            </div>
          </Card>
        ) : null}
        {rotated ? (
          // It takes the focus, as the created one's does: the secret to copy is there.
          <Card title="Secret rotated" focus={shown}>
            <p className="text-sm text-slate-600">
              Copy the new signing secret for <span className="break-all">{rotated.url}</span> now: it is shown once. For the next 24 hours
              each delivery is signed with both secrets (<code>Holm-Signature: t=…,v1=&lt;new&gt;,v1=&lt;previous&gt;</code>), so the
              receiver can switch to the new one without refusing a delivery; then only the new one signs.
            </p>
            <div className="mt-3 flex items-center gap-2">
              <code data-testid="new-secret" className="flex-1 break-all rounded-md bg-slate-900 px-3 py-2 font-mono text-xs text-emerald-200">
                {rotated.secret}
              </code>
              <CopyButton text={rotated.secret} label="Copy secret" />
            </div>
          </Card>
        ) : null}
        {!canEdit ? (
          <Card title="Webhooks">
            <p className="text-sm text-slate-600">Members of this workspace manage its webhooks; a viewer does not see them.</p>
          </Card>
        ) : (
          <>
            <Card title="Add a webhook">
              <PostForm key={`create-${made}`} csrf={csrf} intent="create" className="space-y-3">
                <Field label="URL" name="url" type="url" required maxLength={2048} placeholder="https://hooks.example.com/holm" error={fieldError(shown, "url")} />
                <fieldset>
                  <legend className="mb-1 text-sm font-medium text-slate-700">Events</legend>
                  <div className="flex flex-wrap gap-x-4 gap-y-1 text-sm">
                    {["*", ...WEBHOOK_EVENT_KINDS].map((k) => (
                      <label key={k} className="flex items-center gap-1.5">
                        <input type="checkbox" name="events" value={k} defaultChecked={k === "*"} />
                        <span className="font-mono text-xs">{k === "*" ? "all events" : k}</span>
                      </label>
                    ))}
                  </div>
                </fieldset>
                <Button type="submit">Add webhook</Button>
              </PostForm>
            </Card>
            {hooks.length === 0 ? (
              <Card title="Webhooks">
                <p className="text-sm text-slate-600">No webhooks yet. A webhook receives this workspace's events as signed POSTs.</p>
              </Card>
            ) : (
              hooks.map((h) => <WebhookCard key={h.id} hook={h} csrf={csrf} canEdit={canEdit} />)
            )}
          </>
        )}
      </div>
    </Shell>
  );
}
