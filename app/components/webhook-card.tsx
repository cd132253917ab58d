import { useEffect, useRef, useState } from "react";
import { useFetcher } from "react-router";
import { WEBHOOK_EVENT_KINDS } from "~/protocol/webhook-events";
import { useEditor } from "./box-meta-edit";
import { PostForm } from "./post-form";
import { Alert, Button, Card, CsrfInput, FieldMessage, useInvalid, when } from "./ui";
import { type DeliveryRow, WebhookDeliveries } from "./webhook-deliveries";

// One webhook on the Webhooks page: what it is, its buttons (Edit, Disable, Rotate secret,
// Delete), its in-place edit form and its delivery log. Two webhooks may share a URL (say, one
// for every event and one for a few), so each button's name says the webhook's id as well:
// "Delete <url> (whk_…)", and the id is on the card for the eye too.

export type WebhookRow = {
  id: string;
  url: string;
  events: string[];
  enabled: boolean;
  created_at_ms: number;
  rotation_ends_at_ms: number | null;
  deliveries: DeliveryRow[];
};

/** How a webhook is named on its buttons, dialogs and log: its URL and, to tell it from another to the same URL, its id. */
export const webhookName = (h: Pick<WebhookRow, "id" | "url">) => `${h.url} (${h.id})`;

export function WebhookCard({ hook: h, csrf, canEdit }: { hook: WebhookRow; csrf: string; canEdit: boolean }) {
  const name = webhookName(h);
  const { editing, open, close, opener } = useEditor();
  // Said after a save, in a live region that is there before it (so that it is read out).
  const [saved, setSaved] = useState("");
  return (
    <Card title={h.url}>
      <div className="mb-3 flex flex-wrap items-center gap-3 text-sm text-slate-600">
        <span className={h.enabled ? "font-medium text-emerald-700" : "font-medium text-slate-600"}>{h.enabled ? "enabled" : "disabled"}</span>
        <span>
          events: <span className="font-mono text-xs">{h.events.join(", ")}</span>
        </span>
        <span>since {when(h.created_at_ms)}</span>
        <span className="font-mono text-xs">{h.id}</span>
        {h.rotation_ends_at_ms ? <span>previous secret also signs until {when(h.rotation_ends_at_ms)}</span> : null}
        <span role="status" className="font-medium text-emerald-700">
          {saved}
        </span>
        <span className="ml-auto flex flex-wrap gap-2">
          <Button
            ref={opener}
            type="button"
            variant="secondary"
            aria-label={`Edit ${name}`}
            aria-expanded={editing}
            onClick={() => {
              setSaved("");
              if (editing) close();
              else open();
            }}
          >
            Edit
          </Button>
          <PostForm csrf={csrf} intent={h.enabled ? "disable" : "enable"} fields={{ id: h.id }}>
            <Button type="submit" variant="secondary" aria-label={`${h.enabled ? "Disable" : "Enable"} ${name}`}>
              {h.enabled ? "Disable" : "Enable"}
            </Button>
          </PostForm>
          <PostForm
            csrf={csrf}
            intent="rotate"
            fields={{ id: h.id }}
            confirm={{
              title: `Rotate the secret of ${name}?`,
              body: "A new secret is made and shown once. The current one goes on signing beside it for 24 hours, then stops.",
              action: "Rotate secret",
            }}
          >
            <Button type="submit" variant="secondary" aria-label={`Rotate secret of ${name}`}>
              Rotate secret
            </Button>
          </PostForm>
          <PostForm
            csrf={csrf}
            intent="delete"
            fields={{ id: h.id }}
            confirm={{ title: `Delete the webhook to ${name}?`, body: "Nothing more is sent to it, and its delivery log goes too.", action: "Delete webhook" }}
          >
            <Button type="submit" variant="danger" aria-label={`Delete ${name}`}>
              Delete
            </Button>
          </PostForm>
        </span>
      </div>
      {editing ? (
        <EditForm
          hook={h}
          name={name}
          csrf={csrf}
          close={close}
          done={() => {
            setSaved("Webhook saved.");
            close();
          }}
        />
      ) : null}
      <WebhookDeliveries csrf={csrf} hook={h.id} name={name} deliveries={h.deliveries} canEdit={canEdit} />
    </Card>
  );
}

type Answer = { ok?: string; error?: string; field?: string };

/**
 * The webhook's URL and events, changed in place (the page's `edit`: the same model as PATCH
 * /v1/webhooks/{id}; the id and the secret stay). Sent with a fetcher, so a refusal is this
 * form's alone: said at the URL or at the events, which then have the focus, what was typed kept.
 */
function EditForm({ hook: h, name, csrf, close, done }: { hook: WebhookRow; name: string; csrf: string; close: () => void; done: () => void }) {
  const fetcher = useFetcher<Answer>();
  const answer = fetcher.state === "idle" ? fetcher.data : undefined;
  const sent = useRef(false);
  useEffect(() => {
    if (fetcher.state !== "idle") sent.current = true;
    else if (sent.current) {
      sent.current = false;
      if (fetcher.data?.ok) done();
    }
  }, [fetcher.state, fetcher.data, done]);
  const at = (f: string) => (answer?.error && answer.field === f ? { message: answer.error, answer } : undefined);
  const urlError = at("url");
  const eventsError = at("events");
  const other = answer?.error && answer.field !== "url" && answer.field !== "events" ? answer : undefined;
  const urlId = `${h.id}-url`;
  const eventsId = `${h.id}-events`;
  const url = useInvalid(urlId, urlError);
  const firstEvent = useRef<HTMLInputElement>(null);
  useEffect(() => {
    if (eventsError) firstEvent.current?.focus();
  }, [eventsError?.answer]);
  const all = h.events.includes("*");
  return (
    <fetcher.Form method="post" aria-label={`Edit ${name}`} className="mb-4 space-y-3 rounded-md bg-slate-50 p-3" onKeyDown={(e) => e.key === "Escape" && close()}>
      <CsrfInput token={csrf} />
      <input type="hidden" name="intent" value="edit" />
      <input type="hidden" name="id" value={h.id} />
      {other ? <Alert tone="error" focus={other}>{other.error}</Alert> : null}
      <div className="text-sm">
        <label className="block">
          <span className="font-medium text-slate-700">URL</span>
          <input
            {...url}
            name="url"
            type="url"
            required
            maxLength={2048}
            defaultValue={h.url}
            autoFocus
            className="mt-1 block w-full rounded-md border border-slate-300 px-3 py-1.5 text-sm shadow-sm focus:border-indigo-500 focus:outline-none focus:ring-1 focus:ring-indigo-500 aria-invalid:border-red-600"
          />
        </label>
        <FieldMessage name={urlId} error={urlError} />
      </div>
      <fieldset aria-describedby={eventsError ? `${eventsId}-error` : undefined}>
        <legend className="mb-1 text-sm font-medium text-slate-700">Events</legend>
        <div className="flex flex-wrap gap-x-4 gap-y-1 text-sm">
          {["*", ...WEBHOOK_EVENT_KINDS].map((k, n) => (
            <label key={k} className="flex items-center gap-1.5">
              <input ref={n === 0 ? firstEvent : undefined} type="checkbox" name="events" value={k} defaultChecked={all ? k === "*" : h.events.includes(k)} />
              <span className="font-mono text-xs">{k === "*" ? "all events" : k}</span>
            </label>
          ))}
        </div>
        <FieldMessage name={eventsId} error={eventsError} />
      </fieldset>
      <div className="flex gap-2">
        <Button type="submit" disabled={fetcher.state !== "idle"}>
          Save
        </Button>
        <Button type="button" variant="ghost" onClick={close}>
          Cancel
        </Button>
      </div>
    </fetcher.Form>
  );
}
