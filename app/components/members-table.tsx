import type { Member, Role } from "~/models/workspace.server";
import { PostForm } from "./post-form";
import { Table } from "./table";
import { Button, duration, when } from "./ui";

// The members page's table: each person with their role (a select for owners and admins), when
// they were last seen in the console, and the API keys they made with each key's last use.

export interface PersonKey {
  id: string;
  name: string;
  last_used_ms: number | null;
  status: "active" | "revoked" | "expired";
}

export interface PendingInvitation {
  id: string;
  email: string;
  role: Role;
  created_at_ms: number;
  expires_at_ms: number;
  invited_by: string;
}

/** "4m ago", "just now" (a minute is as close as last seen is kept), "never". */
export function ago(ms: number | null, now: number): string {
  if (!ms) return "never";
  const d = now - ms;
  return d < 60_000 ? "just now" : `${duration(d)} ago`;
}

function Keys({ keys, now }: { keys: PersonKey[] | undefined; now: number }) {
  const active = (keys ?? []).filter((k) => k.status === "active");
  const gone = (keys ?? []).length - active.length;
  if (!active.length && !gone) return <span className="text-slate-600">none</span>;
  return (
    <ul className="space-y-0.5">
      {active.map((k) => (
        <li key={k.id} className="break-words">
          <span className="font-medium">{k.name}</span>{" "}
          <span className="text-xs text-slate-600" title={when(k.last_used_ms)}>
            {k.last_used_ms ? `used ${ago(k.last_used_ms, now)}` : "never used"}
          </span>
        </li>
      ))}
      {gone ? <li className="text-xs text-slate-600">{gone} revoked or expired</li> : null}
    </ul>
  );
}

export function MembersTable({
  roles,
  members,
  keys,
  me,
  manage,
  csrf,
  workspace,
  now,
  answers,
}: {
  /** The roles a select offers (ROLES, from the page). */
  roles: readonly Role[];
  members: Member[];
  keys: Record<string, PersonKey[]>;
  me: string;
  manage: boolean;
  csrf: string;
  workspace: string;
  now: number;
  /** Counts the page's answers: each one puts every role select back on the member's real role. */
  answers: number;
}) {
  return (
    <Table caption="Members" columns={["Person", "Role", "Last seen", "API keys"]} cell="py-2 pr-4" actions>
      {members.map((m) => (
        <tr key={m.user_id} className="align-top">
          <td className="min-w-32 py-2 pr-4">
            <span className="block break-words">
              {m.name}
              {m.user_id === me ? " (you)" : ""}
            </span>
            <span className="block break-all text-xs text-slate-600">{m.email}</span>
          </td>
          <td className="py-2 pr-4">
            {manage ? (
              <PostForm csrf={csrf} intent="role" fields={{ user: m.user_id }} className="flex items-center gap-2">
                <label className="sr-only" htmlFor={`role-${m.user_id}`}>
                  Role of {m.email}
                </label>
                {/* Keyed by the role and the answers: a refused change shows the real role again. */}
                <select
                  key={`${m.role}:${answers}`}
                  id={`role-${m.user_id}`}
                  name="role"
                  defaultValue={m.role}
                  className="rounded-md border border-slate-300 px-2 py-1 text-sm"
                >
                  {roles.map((r) => (
                    <option key={r} value={r}>
                      {r}
                    </option>
                  ))}
                </select>
                <Button type="submit" variant="secondary" aria-label={`Save the role of ${m.email}`}>
                  Save
                </Button>
              </PostForm>
            ) : (
              m.role
            )}
          </td>
          <td className="py-2 pr-4 whitespace-nowrap" title={when(m.last_seen_ms)}>
            {ago(m.last_seen_ms, now)}
          </td>
          <td className="py-2 pr-4">
            <Keys keys={keys[m.user_id]} now={now} />
          </td>
          <td className="py-2 text-right">
            {manage ? (
              <PostForm
                csrf={csrf}
                intent="remove"
                fields={{ user: m.user_id }}
                confirm={{ title: `Remove ${m.name} from ${workspace}?`, body: `${m.email} loses access to its boxes at once; a screen they hold is given back.`, action: "Remove member" }}
              >
                <Button type="submit" variant="danger" aria-label={`Remove ${m.email}`}>
                  Remove
                </Button>
              </PostForm>
            ) : null}
          </td>
        </tr>
      ))}
    </Table>
  );
}
