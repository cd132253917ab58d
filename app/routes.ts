import { type RouteConfig, index, route } from "@react-router/dev/routes";

// Every /v1 route is listed here, in one place: the auth-matrix test reads this list.
export const v1Routes = [
  route("v1/health", "routes/v1/health.ts"),
  route("v1/boxes", "routes/v1/boxes.ts"),
  route("v1/boxes/:id", "routes/v1/box.ts"),
  route("v1/boxes/:id/pause", "routes/v1/box-pause.ts"),
  route("v1/boxes/:id/resume", "routes/v1/box-resume.ts"),
  route("v1/boxes/:id/stop", "routes/v1/box-stop.ts"),
  route("v1/catalog", "routes/v1/catalog.ts"),
  route("v1/events", "routes/v1/events.ts"),
  route("v1/jobs/reap", "routes/v1/jobs-reap.ts"),
  route("v1/*", "routes/v1/not-found.ts"),
];

export default [
  index("routes/home.tsx"),
  ...v1Routes,
] satisfies RouteConfig;
