import { v1 } from "~/utils/route.server";

const route = v1({
  GET: () => ({ ok: true, service: "holm-server" }),
});

export const loader = route.loader, action = route.action;
