import type { DeliveryInfo } from "~/protocol/api-webhook";
import { PostForm } from "./post-form";
import { Table } from "./table";
import { Button, when } from "./ui";

export type DeliveryRow = DeliveryInfo;

const TONE: Record<DeliveryRow["status"], string> = {
  delivered: "bg-emerald-100 text-emerald-800",
  pending: "bg-amber-100 text-amber-800",
  failed: "bg-rose-100 text-rose-800",
};

/**
 * One webhook's delivery log on the Webhooks page, newest first: the event, status, attempts, the
 * receiver's last answer and its latency, the error and the next try; Replay sends the same event
 * again as a new delivery, unless one of that event is still pending (docs/decisions/0018).
 * `name`: the webhook's (webhookName), so that two webhooks to one URL have logs and Replay buttons
 * named apart.
 */
export function WebhookDeliveries({ csrf, hook, name, deliveries, canEdit }: { csrf: string; hook: string; name: string; deliveries: DeliveryRow[]; canEdit: boolean }) {
  if (deliveries.length === 0) return <p className="text-sm text-slate-600">No deliveries yet: the next subscribed event is sent here.</p>;
  return (
    <Table caption={`Deliveries to ${name}`} columns={["Event", "Status", "Attempts", "Answer", "Latency", "Last try", "Next try"]} cell="py-2 pr-4" actions>
      {deliveries.map((d) => (
        <tr key={d.id} data-testid="delivery">
          <td className="py-2 pr-4">
            <span className="font-mono text-xs">{d.kind}</span> <span className="text-xs text-slate-600">#{d.event_seq}</span>
            {d.replay_of ? <span className="ml-1 text-xs text-slate-600">(replay)</span> : null}
          </td>
          <td className="py-2 pr-4">
            <span className={`rounded px-1.5 py-0.5 text-xs font-medium ${TONE[d.status]}`}>{d.status}</span>
            {d.error ? <div className="mt-1 max-w-xs break-words text-xs text-slate-600">{d.error}</div> : null}
          </td>
          <td className="py-2 pr-4">{d.attempts}</td>
          <td className="py-2 pr-4">{d.last_status ?? "—"}</td>
          <td className="py-2 pr-4">{d.latency_ms === null ? "—" : `${d.latency_ms} ms`}</td>
          <td className="py-2 pr-4">{when(d.last_attempt_at_ms)}</td>
          <td className="py-2 pr-4">{d.next_attempt_at_ms ? when(d.next_attempt_at_ms) : "—"}</td>
          <td className="py-2 text-right">
            {canEdit ? (
              <PostForm csrf={csrf} intent="replay" fields={{ id: hook, delivery: d.id }}>
                <Button type="submit" variant="secondary" aria-label={`Replay ${d.kind} #${d.event_seq}${d.replay_of ? " (replay)" : ""} to ${name}`}>
                  Replay
                </Button>
              </PostForm>
            ) : null}
          </td>
        </tr>
      ))}
    </Table>
  );
}
