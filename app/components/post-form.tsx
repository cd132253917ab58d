import type { ReactNode } from "react";
import { Form } from "react-router";
import { CsrfInput } from "./ui";

/**
 * A console form that posts one `intent` to the page's action, with the session's CSRF token
 * and the hidden `fields` that name what it acts on (a user, a key, a box). With `confirmText`
 * the browser asks first and nothing is sent unless the person agrees.
 */
export function PostForm({
  csrf,
  intent,
  fields = {},
  confirmText,
  className,
  children,
}: {
  csrf: string;
  intent: string;
  fields?: Record<string, string>;
  confirmText?: string;
  className?: string;
  children: ReactNode;
}) {
  return (
    <Form
      method="post"
      className={className}
      onSubmit={(e) => {
        if (confirmText && !confirm(confirmText)) e.preventDefault();
      }}
    >
      <CsrfInput token={csrf} />
      <input type="hidden" name="intent" value={intent} />
      {Object.entries(fields).map(([name, value]) => (
        <input key={name} type="hidden" name={name} value={value} />
      ))}
      {children}
    </Form>
  );
}
