import { Form, redirect, useActionData, useRouteLoaderData } from "react-router";
import { fieldError } from "~/components/action-banner";
import { Shell } from "~/components/shell";
import { Alert, Button, Card, CsrfInput, Field } from "~/components/ui";
import { requireConsole, requireCsrf } from "~/edge/console.server";
import { field, formAction, formFields } from "~/edge/form.server";
import { setSessionWorkspace } from "~/models/session.server";
import { createWorkspace } from "~/models/workspace.server";
import type { loader as rootLoader } from "~/root";
import type { Route } from "./+types/workspace-new";

export const meta: Route.MetaFunction = () => [{ title: "New workspace · holm" }];

export async function loader({ request }: Route.LoaderArgs) {
  await requireConsole(request);
  return null;
}

export async function action({ request }: Route.ActionArgs) {
  return formAction(async () => {
    const ctx = await requireConsole(request);
    const form = await request.formData();
    requireCsrf(form, ctx);
    const ws = await formFields({ name: "name" }, () => createWorkspace(ctx.user.id, field(form, "name")));
    await setSessionWorkspace(ctx.session.id, ws.id);
    throw redirect("/");
  });
}

export default function NewWorkspace() {
  const result = useActionData<typeof action>();
  const root = useRouteLoaderData<typeof rootLoader>("root");
  return (
    <Shell>
      <div className="max-w-md">
        <Card title="Create a workspace">
          <p className="mb-4 text-sm text-slate-600">A workspace holds boxes, members and API keys. You will own it.</p>
          <Form method="post" className="space-y-4">
            <CsrfInput token={root?.me?.csrf ?? ""} />
            {/* A refusal of the name is said at its field (fieldError); any other here, with the focus. */}
            {result && "error" in result && !result.field ? <Alert focus={result}>{result.error}</Alert> : null}
            <Field label="Workspace name" name="name" required maxLength={80} error={fieldError(result, "name")} />
            <Button type="submit">Create workspace</Button>
          </Form>
        </Card>
      </div>
    </Shell>
  );
}
