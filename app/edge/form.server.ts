import { data } from "react-router";
import { isApiError } from "~/utils/api-error.server";

/** Runs a console action; a refusal comes back as `{error}` for the form instead of an error page. */
export async function formAction<T>(fn: () => Promise<T>) {
  try {
    return await fn();
  } catch (e) {
    if (e instanceof Response) throw e;
    if (isApiError(e)) return data({ error: e.message }, { status: e.status === 401 ? 401 : 400 });
    throw e;
  }
}

export function field(form: FormData, name: string): string {
  const v = form.get(name);
  return typeof v === "string" ? v : "";
}
