import { type ReactNode, useEffect, useState } from "react";
import { useNavigation } from "react-router";
import { Alert, type FieldError } from "./ui";

// What a console page says about its last action ("Role changed.", an error, a new link) belongs
// to that action only. useActionBanner keeps it while it is the last: it goes when the next form
// is sent (the new answer replaces it), when the person leaves the page (React Router drops
// action data), when they dismiss it, and, for a plain `ok` message that did not take the focus,
// by itself after `okMs`.
// It also counts answers, so a page can reset what an answer made stale: a form's fields after
// a success (`key={successes}`), a select a refusal left on the refused value (`key={answers}`).

/** What console actions answer: `{ok}`, `{error}` (formAction), or a page's own success shape. */
type Answer = object;

/** How many answers so far met `which` (all by default): a `key` that changes with each. */
export function useAnswerCount<T extends Answer>(answer: T | undefined, which: (a: T) => boolean = () => true): number {
  const [n, setN] = useState(0);
  useEffect(() => {
    if (answer && which(answer)) setN((c) => c + 1);
    // `which` is a predicate of the answer's shape; a new function each render is no new answer.
  }, [answer]);
  return n;
}

export function useActionBanner<T extends Answer>(answer: T | undefined, opts: { okMs?: number } = {}) {
  const navigation = useNavigation();
  const [dismissed, setDismissed] = useState<T | undefined>(undefined);
  const answers = useAnswerCount(answer);
  const successes = useAnswerCount(answer, (a) => !("error" in a));
  const sending = navigation.state !== "idle" && navigation.formMethod !== undefined && navigation.formMethod.toUpperCase() !== "GET";

  useEffect(() => {
    // Not one that took the focus (OkOrError): going by itself, it would drop the focus on the body.
    if (!answer || !opts.okMs || !("ok" in answer) || ("focus" in answer && answer.focus === true)) return;
    const timer = setTimeout(() => setDismissed(answer), opts.okMs);
    return () => clearTimeout(timer);
  }, [answer, opts.okMs]);

  const shown = answer && answer !== dismissed && !sending ? answer : undefined;
  return { shown, dismiss: () => setDismissed(answer), answers, successes };
}

/** A page's banner with a Dismiss button: an error (role alert) or a success (role status). */
export function ActionBanner({
  tone,
  onDismiss,
  focus,
  children,
}: {
  tone: "error" | "success" | "info";
  onDismiss: () => void;
  /** See Alert's: the answer itself, so that each new answer takes the focus. */
  focus?: boolean | object;
  children: ReactNode;
}) {
  return (
    <Alert tone={tone} focus={focus}>
      <div className="flex items-start gap-3">
        <div className="min-w-0 flex-1 break-words">{children}</div>
        <button
          type="button"
          onClick={onDismiss}
          aria-label="Dismiss"
          className="-my-0.5 shrink-0 rounded px-1.5 text-base leading-6 opacity-80 hover:opacity-100 focus-visible:outline-2 focus-visible:outline-current"
        >
          ×
        </button>
      </div>
    </Alert>
  );
}

/**
 * The usual banners of `{ok}` and `{error}` answers; pages add their own for other shapes. An
 * answer with `focus: true` (an action that removed what had the focus) puts the focus on its banner.
 */
export function OkOrError({ shown, dismiss }: { shown: Answer | undefined; dismiss: () => void }) {
  if (!shown) return null;
  // A refusal about one field is said at that field (fieldError), not twice.
  if ("field" in shown && typeof shown.field === "string") return null;
  // The answer, not `true`: the banner may stay mounted from one answer to the next.
  const focus = "focus" in shown && shown.focus === true ? shown : undefined;
  if ("error" in shown && typeof shown.error === "string") return <ActionBanner tone="error" onDismiss={dismiss} focus={focus}>{shown.error}</ActionBanner>;
  if ("ok" in shown && typeof shown.ok === "string") return <ActionBanner tone="success" onDismiss={dismiss} focus={focus}>{shown.ok}</ActionBanner>;
  return null;
}

/** The refusal `shown` says at the form's field `name` (an action's `{error, field}`), if it is that field's. */
export function fieldError(shown: Answer | undefined, name: string): FieldError | undefined {
  if (!shown || !("field" in shown) || shown.field !== name || !("error" in shown) || typeof shown.error !== "string") return undefined;
  return { message: shown.error, answer: shown };
}
