import { v1 } from "~/utils/route.server";

const route = v1({
  GET: () => ({ ok: true, service: "holm-server" }),
});

export const loader = route.loader;
export const action = route.action;
// Read by the auth-matrix test: the methods this route serves.
export const handle = { methods: ["GET"] };
