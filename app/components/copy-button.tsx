import { useState } from "react";

/** Copies text to the clipboard and says so. */
export function CopyButton({ text, label = "Copy" }: { text: string; label?: string }) {
  const [done, setDone] = useState(false);
  return (
    <button
      type="button"
      onClick={async () => {
        try {
          await navigator.clipboard.writeText(text);
        } catch {
          // Clipboard access can be refused (insecure origin); select-and-copy still works.
        }
        setDone(true);
        setTimeout(() => setDone(false), 2000);
      }}
      className="rounded-md bg-white px-2 py-1 text-xs font-medium text-slate-800 ring-1 ring-slate-300 hover:bg-slate-50"
    >
      {done ? "Copied" : label}
    </button>
  );
}
