import { Links, Meta, Outlet, Scripts, ScrollRestoration, isRouteErrorResponse, useRouteLoaderData } from "react-router";
import type { Route } from "./+types/root";
import "./app.css";
import { NetworkCutGuard } from "~/components/network-cut-guard";
import { type ConsoleFrame, Shell } from "~/components/shell";
import { Button } from "~/components/ui";
import { getConsole } from "~/edge/console.server";

export async function loader({ request }: Route.LoaderArgs): Promise<ConsoleFrame> {
  const ctx = await getConsole(request);
  if (!ctx) return { me: null };
  return {
    me: {
      user: { id: ctx.user.id, name: ctx.user.name, email: ctx.user.email, is_admin: ctx.user.is_admin },
      workspaces: ctx.workspaces,
      workspace: ctx.workspace ?? null,
      csrf: ctx.csrf,
    },
  };
}

export const links: Route.LinksFunction = () => [{ rel: "icon", href: "/favicon.ico" }];

export function Layout({ children }: { children: React.ReactNode }) {
  return (
    <html lang="en">
      <head>
        <meta charSet="utf-8" />
        <NetworkCutGuard />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <Meta />
        <Links />
      </head>
      <body className="min-h-screen">
        {children}
        <ScrollRestoration />
        <Scripts />
      </body>
    </html>
  );
}

export default function App() {
  return <Outlet />;
}

/**
 * A request the browser itself failed: no answer came (the network changed under it, the server
 * restarted). fetch rejects with a TypeError whose words differ by browser.
 */
function isCutRequest(error: unknown): boolean {
  return error instanceof TypeError && /failed to fetch|load failed|network/i.test(error.message);
}

export function ErrorBoundary({ error }: Route.ErrorBoundaryProps) {
  const root = useRouteLoaderData<ConsoleFrame>("root");
  let title = "Something went wrong";
  let detail = "The console hit an unexpected error.";
  const cut = isCutRequest(error);
  // A route's 404 may say what is missing and where to go instead (a box's screen it lacks).
  let link: { href: string; label: string } | undefined;
  if (isRouteErrorResponse(error)) {
    title = error.status === 404 ? "Not found" : `Error ${error.status}`;
    detail = error.status === 404 ? "There is no page at this address." : error.statusText || detail;
    const said = error.data as { detail?: unknown; link?: { href?: unknown; label?: unknown } } | null;
    if (error.status === 404 && typeof said?.detail === "string") detail = said.detail;
    if (error.status === 404 && typeof said?.link?.href === "string" && typeof said.link.label === "string") link = { href: said.link.href, label: said.link.label };
  } else if (cut) {
    // A read was already tried twice (components/network-cut-guard); a change is never sent twice,
    // so the person is told it may or may not have been made.
    title = "The connection was cut";
    detail =
      "No answer came from the server: the network changed under the request, or the server restarted. " +
      "If you had just sent a change, it may or may not have been made. Reload to see where things stand.";
  } else if (import.meta.env.DEV && error instanceof Error) {
    detail = error.message;
  }
  // Inside the console's frame (header, workspace switcher, navigation) when the root's own loader
  // answered: a stale link to a box or a page still leaves the person in the console, one click
  // from anywhere. Bare when the root itself failed (nothing to draw the frame from).
  const page = (
    <>
      {/* React hoists it into <head>: an error page still names itself in the tab and to screen readers. */}
      <title>{`${title} · holm`}</title>
      <h1 className="text-2xl font-semibold">{title}</h1>
      <p className="mt-2 text-slate-600">{detail}</p>
      <div className="mt-4 flex items-center gap-4">
        {cut && (
          <Button type="button" onClick={() => window.location.reload()}>
            Reload
          </Button>
        )}
        {link ? (
          <a className="text-indigo-600 underline" href={link.href}>
            {link.label}
          </a>
        ) : null}
        <a className="text-indigo-600 underline" href="/">
          Back to boxes
        </a>
      </div>
    </>
  );
  if (root?.me) return <Shell><div className="max-w-xl">{page}</div></Shell>;
  return <main className="mx-auto max-w-xl p-8">{page}</main>;
}
