import { createContext, useContext } from "react";

// The page's CSP nonce (server/page-csp.ts) for the few scripts the console writes itself; React
// Router's own take it from <ServerRouter nonce>. Only the server's render knows it: in the
// browser it is undefined, and a script element's nonce is hidden from the DOM anyway, so the
// element that hydrates keeps the server's attribute (suppressHydrationWarning on it).
export const NonceContext = createContext<string | undefined>(undefined);

export function useNonce(): string | undefined {
  return useContext(NonceContext);
}
