import { v1 } from "~/edge/route.server";

const route = v1({
  GET: () => ({ ok: true, service: "holm-server" }),
});

export const loader = route.loader, action = route.action;
