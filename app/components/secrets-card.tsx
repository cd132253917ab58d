import { PostForm } from "./post-form";
import { Table } from "./table";
import { Button, Card, Field, type FieldError, when } from "./ui";

export interface SecretRow {
  name: string;
  created_at_ms: number;
  updated_at_ms: number;
}

/**
 * The workspace's secrets on the Settings page (004's secret_ref): names and dates, a form to add
 * or replace one, and delete. Write-only: the value field is a password input that the page
 * never fills, and no value ever comes back from the server. `formKey` changes after a save,
 * so the form is drawn afresh and what was typed leaves the page too. `valueError`: a refused
 * value, said at its field (a refusal keeps the form as typed).
 */
export function SecretsCard({
  csrf,
  workspace,
  secrets,
  canEdit,
  formKey,
  valueError,
}: {
  csrf: string;
  workspace: string;
  secrets: SecretRow[];
  canEdit: boolean;
  formKey: string;
  valueError?: FieldError;
}) {
  return (
    <Card title={`Secrets of ${workspace}`}>
      <p className="mb-4 text-sm text-slate-600">
        Agents type a secret into a page by name (<code>secret_ref</code> of <code>fill</code> and <code>type</code>) without ever
        seeing it. Values are stored encrypted and are never shown again.
      </p>
      {canEdit ? (
        <PostForm key={formKey} csrf={csrf} intent="secret-put" className="mb-4 grid gap-3 sm:grid-cols-[1fr_1fr_auto] sm:items-end">
          <Field label="Name" name="name" required maxLength={128} pattern="[A-Za-z0-9_][A-Za-z0-9_.\-]*" placeholder="LOGIN_PASSWORD" />
          <Field label="Value" name="value" type="password" autoComplete="new-password" required error={valueError} />
          <Button type="submit">Save secret</Button>
        </PostForm>
      ) : null}
      {secrets.length === 0 ? (
        <p className="text-sm text-slate-600">No secrets yet.</p>
      ) : (
        <Table caption="Secrets" columns={["Name", "Created", "Updated"]} cell="py-2 pr-4" actions>
          {secrets.map((s) => (
            <tr key={s.name}>
              <td className="py-2 pr-4 font-mono text-xs">{s.name}</td>
              <td className="py-2 pr-4">{when(s.created_at_ms)}</td>
              <td className="py-2 pr-4">{when(s.updated_at_ms)}</td>
              <td className="py-2 text-right">{canEdit ? <DeleteSecret csrf={csrf} name={s.name} /> : null}</td>
            </tr>
          ))}
        </Table>
      )}
    </Card>
  );
}

function DeleteSecret({ csrf, name }: { csrf: string; name: string }) {
  const confirm = { title: `Delete the secret ${name}?`, body: "Steps that name it will fail.", action: "Delete secret" };
  return (
    <PostForm csrf={csrf} intent="secret-delete" fields={{ name }} confirm={confirm}>
      <Button type="submit" variant="danger" aria-label={`Delete ${name}`}>Delete</Button>
    </PostForm>
  );
}
