import { type FormEvent, type ReactNode, useCallback, useEffect, useRef, useState } from "react";

// "Are you sure?" in the page, not the browser's confirm(): a modal <dialog> (focus moves into
// it, Escape cancels, the page behind is inert) that names what is about to happen, with the
// dangerous choice spelled out on its button. useConfirmSubmit wires it to a form: the first
// submit opens the dialog, and agreeing submits the same form again, for real.

export interface ConfirmText {
  /** The question, naming the thing: "Remove research-box?" */
  title: string;
  /** What follows from it. */
  body?: ReactNode;
  /** The button that goes ahead: "Remove". */
  action: string;
}

export function ConfirmDialog({
  open,
  text,
  onCancel,
  onConfirm,
}: {
  open: boolean;
  text: ConfirmText;
  onCancel: () => void;
  onConfirm: () => void;
}) {
  const ref = useRef<HTMLDialogElement>(null);
  useEffect(() => {
    const d = ref.current;
    if (!d) return;
    if (open && !d.open) d.showModal();
    if (!open && d.open) d.close();
  }, [open]);
  return (
    <dialog
      ref={ref}
      aria-labelledby="confirm-title"
      onCancel={(e) => {
        e.preventDefault();
        onCancel();
      }}
      onClick={(e) => {
        // A click on the backdrop (the dialog element itself, outside its panel) cancels.
        if (e.target === ref.current) onCancel();
      }}
      className="m-auto w-[min(28rem,calc(100vw-2rem))] rounded-xl bg-white p-0 text-slate-900 shadow-2xl ring-1 ring-slate-200 backdrop:bg-black/50"
    >
      {open ? (
        <div className="p-5">
          <h2 id="confirm-title" className="text-base font-semibold break-words">
            {text.title}
          </h2>
          {text.body ? <div className="mt-2 text-sm text-slate-600 break-words">{text.body}</div> : null}
          <div className="mt-5 flex justify-end gap-2">
            <button
              type="button"
              autoFocus
              onClick={onCancel}
              className="rounded-md px-3 py-1.5 text-sm font-medium text-slate-800 ring-1 ring-slate-300 hover:bg-slate-50"
            >
              Cancel
            </button>
            <button
              type="button"
              onClick={onConfirm}
              className="rounded-md bg-red-700 px-3 py-1.5 text-sm font-medium text-white shadow-sm hover:bg-red-600"
            >
              {text.action}
            </button>
          </div>
        </div>
      ) : null}
    </dialog>
  );
}

/**
 * For a form that must be confirmed: `onSubmit` holds the first submit back and opens the
 * dialog; agreeing submits the form again (with the button that was pressed) and lets it go.
 * With no `text`, submits go straight through.
 */
export function useConfirmSubmit(text: ConfirmText | undefined) {
  const [open, setOpen] = useState(false);
  const form = useRef<HTMLFormElement | null>(null);
  const submitter = useRef<HTMLElement | null>(null);
  const agreed = useRef(false);
  const onSubmit = useCallback(
    (e: FormEvent<HTMLFormElement>) => {
      if (!text || agreed.current) {
        agreed.current = false;
        return;
      }
      e.preventDefault();
      form.current = e.currentTarget;
      submitter.current = (e.nativeEvent as SubmitEvent).submitter ?? null;
      setOpen(true);
    },
    [text],
  );
  const dialog = text ? (
    <ConfirmDialog
      open={open}
      text={text}
      onCancel={() => setOpen(false)}
      onConfirm={() => {
        setOpen(false);
        agreed.current = true;
        const f = form.current;
        const s = submitter.current;
        if (f) f.requestSubmit(s instanceof HTMLButtonElement || s instanceof HTMLInputElement ? s : undefined);
      }}
    />
  ) : null;
  return { onSubmit, dialog };
}
