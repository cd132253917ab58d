import { Links, Meta, Outlet, Scripts, ScrollRestoration, isRouteErrorResponse } from "react-router";
import type { Route } from "./+types/root";
import "./app.css";
import { NetworkCutGuard } from "~/components/network-cut-guard";
import { getConsole } from "~/edge/console.server";

export async function loader({ request }: Route.LoaderArgs) {
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

export function ErrorBoundary({ error }: Route.ErrorBoundaryProps) {
  let title = "Something went wrong";
  let detail = "The console hit an unexpected error.";
  if (isRouteErrorResponse(error)) {
    title = error.status === 404 ? "Not found" : `Error ${error.status}`;
    detail = error.status === 404 ? "There is no page at this address." : error.statusText || detail;
  } else if (import.meta.env.DEV && error instanceof Error) {
    detail = error.message;
  }
  return (
    <main className="mx-auto max-w-xl p-8">
      {/* React hoists it into <head>: an error page still names itself in the tab and to screen readers. */}
      <title>{`${title} · holm`}</title>
      <h1 className="text-2xl font-semibold">{title}</h1>
      <p className="mt-2 text-slate-600">{detail}</p>
      <a className="mt-4 inline-block text-indigo-600 underline" href="/">
        Back to boxes
      </a>
    </main>
  );
}
