import type { ReactNode } from "react";
import { Form, NavLink, useRouteLoaderData } from "react-router";
import { CsrfInput } from "./ui";
import { WorkspaceSwitcher } from "./workspace-switcher";

type Workspace = { id: string; name: string; role: string };

/**
 * What the root route's loader (app/root.tsx) gives every page: the person signed in, or null.
 * Declared here, not taken from the loader's type, so the root's error page can draw this frame
 * without an import cycle.
 */
export interface ConsoleFrame {
  me: {
    user: { id: string; name: string; email: string; is_admin: boolean };
    workspaces: Workspace[];
    workspace: Workspace | null;
    csrf: string;
  } | null;
}

/** The console frame: product name, workspace switcher, navigation, account. `wide`: the page uses the window's width (a box's screen). */
export function Shell({ children, wide = false }: { children: ReactNode; wide?: boolean }) {
  const width = wide ? "max-w-[120rem]" : "max-w-6xl";
  const root = useRouteLoaderData<ConsoleFrame>("root");
  const me = root?.me;
  const link = ({ isActive }: { isActive: boolean }) =>
    `rounded-md px-3 py-1.5 text-sm font-medium ${isActive ? "bg-slate-900 text-white" : "text-slate-700 hover:bg-slate-200"}`;
  return (
    <div className="min-h-screen">
      {/* The first Tab stop: past the header's links and switcher to the page itself (WCAG 2.4.1). */}
      <a
        href="#content"
        className="sr-only focus:not-sr-only focus:absolute focus:left-2 focus:top-2 focus:z-50 focus:rounded-md focus:bg-white focus:px-3 focus:py-2 focus:text-sm focus:font-medium focus:text-indigo-700 focus:ring-2 focus:ring-indigo-500"
      >
        Skip to content
      </a>
      <header className="border-b border-slate-200 bg-white">
        <div className={`mx-auto flex ${width} flex-wrap items-center gap-3 px-4 py-3 sm:px-6`}>
          <a href="/" className="mr-2 text-lg font-semibold tracking-tight text-indigo-700">
            holm
          </a>
          {me ? (
            <>
              <WorkspaceSwitcher workspaces={me.workspaces} current={me.workspace} csrf={me.csrf} />
              <nav aria-label="Console" className="flex flex-wrap gap-1">
                <NavLink to="/" end className={link}>
                  Boxes
                </NavLink>
                <NavLink to="/members" className={link}>
                  Members
                </NavLink>
                <NavLink to="/keys" className={link}>
                  API keys
                </NavLink>
                <NavLink to="/webhooks" className={link}>
                  Webhooks
                </NavLink>
                <NavLink to="/images" className={link}>
                  Images
                </NavLink>
                <NavLink to="/profiles" className={link}>
                  Profiles
                </NavLink>
                <NavLink to="/settings" className={link}>
                  Settings
                </NavLink>
              </nav>
              <div className="ml-auto flex items-center gap-3 text-sm text-slate-600">
                <span title={me.user.email}>{me.user.name}</span>
                <Form method="post" action="/logout">
                  <CsrfInput token={me.csrf} />
                  <button type="submit" className="rounded-md px-2 py-1 text-slate-700 hover:bg-slate-100">
                    Log out
                  </button>
                </Form>
              </div>
            </>
          ) : null}
        </div>
      </header>
      <main id="content" tabIndex={-1} className={`mx-auto ${width} px-4 py-8 outline-none sm:px-6`}>
        {children}
      </main>
    </div>
  );
}
