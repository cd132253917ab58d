import { type RouteConfig, index, route } from "@react-router/dev/routes";
import { NOT_BUILT } from "./routes/v1/not-built-list";

// Every built /v1 route is listed here, in one place: the auth-matrix test reads this list.
// The contract's routes not built yet are v1NotBuilt below.
export const v1Routes = [
  route("v1/health", "routes/v1/health.ts"),
  route("v1/boxes", "routes/v1/boxes.ts"),
  route("v1/boxes/:id", "routes/v1/box.ts"),
  route("v1/boxes/:id/pause", "routes/v1/box-pause.ts"),
  route("v1/boxes/:id/resume", "routes/v1/box-resume.ts"),
  route("v1/boxes/:id/stop", "routes/v1/box-stop.ts"),
  route("v1/boxes/:id/apps", "routes/v1/box-apps.ts"),
  route("v1/boxes/:id/fork", "routes/v1/box-fork.ts"),
  route("v1/boxes/:id/exec", "routes/v1/box-exec.ts"),
  route("v1/boxes/:id/files", "routes/v1/box-files.ts"),
  route("v1/boxes/:id/files/list", "routes/v1/box-files-list.ts"),
  route("v1/boxes/:id/files/grep", "routes/v1/box-files-grep.ts"),
  route("v1/boxes/:id/files/glob", "routes/v1/box-files-glob.ts"),
  route("v1/boxes/:id/screens/:screen/actions", "routes/v1/screen-actions.ts"),
  route("v1/boxes/:id/screens/:screen/frame", "routes/v1/screen-frame.ts"),
  route("v1/boxes/:id/screens/:screen/cursor", "routes/v1/screen-cursor.ts"),
  route("v1/boxes/:id/screens/:screen/clipboard", "routes/v1/screen-clipboard.ts"),
  route("v1/boxes/:id/screens/:screen/recording", "routes/v1/screen-recording.ts"),
  route("v1/boxes/:id/screens/:screen/windows", "routes/v1/screen-windows.ts"),
  route("v1/boxes/:id/screens/:screen/windows/active", "routes/v1/screen-window-active.ts"),
  route("v1/boxes/:id/screens/:screen/windows/wait", "routes/v1/screen-window-wait.ts"),
  route("v1/boxes/:id/screens/:screen/windows/:window", "routes/v1/screen-window.ts"),
  route("v1/boxes/:id/screens/:screen/windows/:window/focus", "routes/v1/screen-window-focus.ts"),
  route("v1/boxes/:id/screens/:screen/windows/:window/arrange", "routes/v1/screen-window-arrange.ts"),
  route("v1/boxes/:id/screens/:screen/viewer/ticket", "routes/v1/screen-viewer-ticket.ts"),
  route("v1/boxes/:id/screens/:screen/viewers", "routes/v1/screen-viewers.ts"),
  route("v1/boxes/:id/screens/:screen/takeover", "routes/v1/screen-takeover.ts"),
  route("v1/boxes/:id/trace", "routes/v1/box-trace.ts"),
  route("v1/boxes/:id/trace/frames/:hash", "routes/v1/box-trace-frame.ts"),
  route("v1/catalog", "routes/v1/catalog.ts"),
  route("v1/events", "routes/v1/events.ts"),
  route("v1/jobs/reap", "routes/v1/jobs-reap.ts"),
  route("v1/jobs/prune", "routes/v1/jobs-prune.ts"),
  route("v1/jobs/run", "routes/v1/jobs-run.ts"),
  route("v1/*", "routes/v1/not-found.ts"),
];

// Routes of the contract not built yet (the list and why: routes/v1/not-built-list.ts), one
// route id each, all served by one module that answers 400 `unsupported`.
export const v1NotBuilt = NOT_BUILT.map((r) => route(r.path, "routes/v1/not-built.ts", { id: `not-built:${r.path}` }));

export default [
  index("routes/home.tsx"),
  route("login", "routes/login.tsx"),
  route("signup", "routes/signup.tsx"),
  route("logout", "routes/logout.ts"),
  route("invite/:token", "routes/invite.tsx"),
  route("workspace", "routes/workspace-switch.ts"),
  route("workspaces/new", "routes/workspace-new.tsx"),
  route("members", "routes/members.tsx"),
  route("keys", "routes/keys.tsx"),
  route("settings", "routes/settings.tsx"),
  route("boxes/:id", "routes/box.tsx"),
  route("boxes/:id/ticket", "routes/box-ticket.ts"),
  route("boxes/:id/trace", "routes/box-trace.tsx"),
  route("boxes/:id/trace/entries", "routes/box-trace-data.ts", { id: "routes/box-trace-entries" }),
  route("boxes/:id/trace/frames/:hash", "routes/box-trace-data.ts", { id: "routes/box-trace-frames" }),
  ...v1Routes,
  ...v1NotBuilt,
] satisfies RouteConfig;
