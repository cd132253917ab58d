import { data } from "react-router";
import { ApiError, isApiError } from "~/utils/api-error.server";

/**
 * What a console action answers for a refusal. `field`: the form's field it is about (the page
 * marks that field invalid, says the message at it and puts the focus in it). `focus`: a form's
 * refusal about none of its fields (a quota): the page's banner says it and takes the focus.
 */
export type Refusal = { error: string; field?: string; focus?: true };

/** Runs a console action; a refusal comes back as `{error}` for the form instead of an error page. */
export async function formAction<T>(fn: () => Promise<T>) {
  try {
    return await fn();
  } catch (e) {
    if (e instanceof Response) throw e;
    if (isApiError(e)) {
      const refusal: Refusal = { error: e.message };
      if (e instanceof FormRefusal) {
        if (e.field) refusal.field = e.field;
        else refusal.focus = true;
      }
      return data(refusal, { status: e.status === 401 ? 401 : 400 });
    }
    throw e;
  }
}

/** A refusal of a form with fields (see formFields): at one of them, or at none. */
class FormRefusal extends ApiError {
  constructor(
    e: ApiError,
    readonly field: string | undefined,
  ) {
    super(e.code, e.message, { retryable: e.retryable, at: e.at });
  }
}

/**
 * Runs the work of a form a person types in (a launch, an invitation). `fields` maps the request
 * fields a refusal can be `at` (ApiError's path, or the start of it: "metadata.labels" covers
 * "metadata.labels.team") to the form's field names; formAction then answers `{error, field}`,
 * or `{error, focus: true}` for a refusal about none of them. Said at the field rather than only
 * in a banner at the top, a refusal is found where it is mended (WCAG 3.3.1).
 */
export async function formFields<T>(fields: Record<string, string>, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (e) {
    // A 401 is the session's, not the form's: the page's usual answer.
    if (!isApiError(e) || e.status === 401 || e instanceof FormRefusal) throw e;
    const at = e.at;
    const path = at === undefined ? undefined : Object.keys(fields).find((p) => at === p || at.startsWith(`${p}.`));
    throw new FormRefusal(e, path === undefined ? undefined : fields[path]);
  }
}

export function field(form: FormData, name: string): string {
  const v = form.get(name);
  return typeof v === "string" ? v : "";
}
