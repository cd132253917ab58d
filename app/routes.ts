import { type RouteConfig, index, route } from "@react-router/dev/routes";

// Every /v1 route is listed here, in one place: the auth-matrix test reads this list.
export const v1Routes = [
  route("v1/health", "routes/v1/health.ts"),
  route("v1/boxes", "routes/v1/boxes.ts"),
  route("v1/boxes/:id", "routes/v1/box.ts"),
  route("v1/boxes/:id/pause", "routes/v1/box-pause.ts"),
  route("v1/boxes/:id/resume", "routes/v1/box-resume.ts"),
  route("v1/boxes/:id/stop", "routes/v1/box-stop.ts"),
  route("v1/boxes/:id/apps", "routes/v1/box-apps.ts"),
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
  route("v1/catalog", "routes/v1/catalog.ts"),
  route("v1/events", "routes/v1/events.ts"),
  route("v1/jobs/reap", "routes/v1/jobs-reap.ts"),
  route("v1/*", "routes/v1/not-found.ts"),
];

export default [
  index("routes/home.tsx"),
  ...v1Routes,
] satisfies RouteConfig;
