import { useLoaderData } from "react-router";
import { type ComponentProps, type ReactNode, useEffect, useRef } from "react";

// Small building blocks so every console page looks and behaves the same.

export function Button({ variant = "primary", className = "", ...props }: ComponentProps<"button"> & { variant?: "primary" | "secondary" | "danger" | "ghost" }) {
  const styles = {
    primary: "bg-indigo-600 text-white hover:bg-indigo-500 shadow-sm",
    secondary: "bg-white text-slate-800 ring-1 ring-slate-300 hover:bg-slate-50",
    danger: "bg-white text-red-700 ring-1 ring-red-200 hover:bg-red-50",
    ghost: "text-slate-700 hover:bg-slate-100",
  }[variant];
  return (
    <button
      {...props}
      className={`inline-flex items-center justify-center gap-1 rounded-md px-3 py-1.5 text-sm font-medium focus-visible:outline-2 focus-visible:outline-offset-2 focus-visible:outline-indigo-600 disabled:cursor-not-allowed disabled:opacity-50 aria-disabled:cursor-not-allowed aria-disabled:opacity-50 ${styles} ${className}`}
    />
  );
}

export function Field({ label, hint, error, ...props }: ComponentProps<"input"> & { label: string; hint?: ReactNode; error?: FieldError }) {
  const name = props.name ?? "field";
  const hintId = hint && props.name ? `${props.name}-hint` : undefined;
  const invalid = useInvalid(name, error, hintId);
  return (
    <div className="text-sm">
      <label className="block">
        <span className="font-medium text-slate-700">{label}</span>
        <input
          {...props}
          {...invalid}
          className="mt-1 block w-full rounded-md border border-slate-300 px-3 py-1.5 text-sm shadow-sm focus:border-indigo-500 focus:outline-none focus:ring-1 focus:ring-indigo-500 aria-invalid:border-red-600"
        />
      </label>
      {hint ? (
        <span id={hintId} className="mt-1 block text-xs text-slate-600">
          {hint}
        </span>
      ) : null}
      <FieldMessage name={name} error={error} />
    </div>
  );
}

/** A refusal said at one field: its message, and the answer it came in (each new one takes the focus). */
export type FieldError = { message: string; answer: object };

/**
 * What ties an input to its refusal (WCAG 3.3.1, 1.3.1): marked invalid, described by the message
 * as well as its help (`describedBy`), and focused when a new refusal comes, so the person lands
 * where it is mended, with what they typed still there.
 */
export function useInvalid(name: string, error: FieldError | undefined, describedBy?: string) {
  const ref = useRef<HTMLInputElement>(null);
  const answer = error?.answer;
  useEffect(() => {
    if (answer) ref.current?.focus();
  }, [answer]);
  return {
    ref,
    "aria-invalid": error ? true : undefined,
    "aria-describedby": [describedBy, error ? `${name}-error` : undefined].filter(Boolean).join(" ") || undefined,
  };
}

/** The refusal's message under its field, with the id useInvalid describes the input by. */
export function FieldMessage({ name, error }: { name: string; error: FieldError | undefined }) {
  if (!error) return null;
  return (
    <span id={`${name}-error`} role="alert" className="mt-1 block text-xs font-medium break-words text-red-700">
      {error.message}
    </span>
  );
}

export function Alert({
  children,
  tone = "error",
  focus = false,
}: {
  children: ReactNode;
  tone?: "error" | "success" | "info";
  /**
   * Take the keyboard's focus when shown: after an action that removed the element that had it.
   * An answer object rather than `true` takes it again for each new answer shown in the same
   * banner (a second removal while the first one's answer is still up).
   */
  focus?: boolean | object;
}) {
  const ref = useRef<HTMLDivElement>(null);
  useEffect(() => {
    if (focus) ref.current?.focus();
  }, [focus]);
  const styles = {
    error: "bg-red-50 text-red-800 ring-red-200",
    success: "bg-emerald-50 text-emerald-800 ring-emerald-200",
    info: "bg-sky-50 text-sky-900 ring-sky-200",
  }[tone];
  return (
    <div ref={ref} tabIndex={focus ? -1 : undefined} role={tone === "error" ? "alert" : "status"} className={`rounded-md px-3 py-2 text-sm ring-1 ${styles}`}>
      {children}
    </div>
  );
}

/** `focus`: an answer that takes the focus to this card when it is new (see Alert's). */
export function Card({ title, children, actions, focus }: { title?: string; children: ReactNode; actions?: ReactNode; focus?: object }) {
  const ref = useRef<HTMLElement>(null);
  useEffect(() => {
    if (focus) ref.current?.focus();
  }, [focus]);
  return (
    <section ref={ref} tabIndex={focus ? -1 : undefined} className="rounded-xl border border-slate-200 bg-white p-5 shadow-sm">
      {title || actions ? (
        <div className="mb-4 flex items-center justify-between gap-2">
          {title ? <h2 className="min-w-0 text-base font-semibold [overflow-wrap:anywhere]">{title}</h2> : <span />}
          {actions}
        </div>
      ) : null}
      {children}
    </section>
  );
}

/**
 * The workspace the page was drawn for (its loader's `pageWorkspace`), if it is a workspace's page.
 * Another tab may switch the session's current workspace meanwhile; a form says which one it means.
 */
export function usePageWorkspace(): string | undefined {
  const data = useLoaderData() as { pageWorkspace?: unknown } | undefined;
  return typeof data?.pageWorkspace === "string" ? data.pageWorkspace : undefined;
}

/**
 * Every console form's CSRF token, and with it the workspace of the page it is on
 * (edge/console.server.ts requireFormWorkspace acts there).
 */
export function CsrfInput({ token }: { token: string }) {
  const workspace = usePageWorkspace();
  return (
    <>
      <input type="hidden" name="csrf" value={token} />
      {workspace ? <input type="hidden" name="page_workspace" value={workspace} /> : null}
    </>
  );
}

export function duration(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m`;
  const h = Math.floor(m / 60);
  if (h < 48) return `${h}h ${m % 60}m`;
  return `${Math.floor(h / 24)}d`;
}

export function when(ms: number | null | undefined): string {
  if (!ms) return "never";
  return new Date(ms).toISOString().replace("T", " ").slice(0, 16) + " UTC";
}
