import type { ReactNode } from "react";
import { Form } from "react-router";
import { type ConfirmText, useConfirmSubmit } from "./confirm-dialog";
import { CsrfInput } from "./ui";

/**
 * A console form that posts one `intent` to the page's action, with the session's CSRF token
 * and the hidden `fields` that name what it acts on (a user, a key, a box). With `confirm` the
 * page asks first (an in-page dialog naming the thing) and nothing is sent unless the person
 * agrees.
 */
export function PostForm({
  csrf,
  intent,
  fields = {},
  confirm,
  className,
  children,
}: {
  csrf: string;
  intent: string;
  fields?: Record<string, string>;
  confirm?: ConfirmText;
  className?: string;
  children: ReactNode;
}) {
  const { onSubmit, dialog } = useConfirmSubmit(confirm);
  return (
    <Form method="post" className={className} onSubmit={onSubmit}>
      <CsrfInput token={csrf} />
      <input type="hidden" name="intent" value={intent} />
      {Object.entries(fields).map(([name, value]) => (
        <input key={name} type="hidden" name={name} value={value} />
      ))}
      {children}
      {dialog}
    </Form>
  );
}
