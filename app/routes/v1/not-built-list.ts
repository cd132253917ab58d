// The routes of the contract (seed 000) this server does not build yet, with the methods the
// seed gives each. Each answers 400 `unsupported` (routes/v1/not-built.ts), so a client can tell
// "not built" from a wrong id (404); a path the seed does not have at all stays 404. Building
// one: delete its line here and add the real route to v1Routes in app/routes.ts.
// Plain data: app/routes.ts reads it at build time, not-built.ts at run time.

const ANY = ["GET", "POST", "PUT", "PATCH", "DELETE"] as const;

export interface NotBuiltRoute {
  path: string;
  methods: readonly ("GET" | "POST" | "PUT" | "PATCH" | "DELETE")[];
  /** The seed's "No bearer token" routes, which take a short-lived token in the path. */
  open?: true;
}

export const NOT_BUILT: readonly NotBuiltRoute[] = [
];
