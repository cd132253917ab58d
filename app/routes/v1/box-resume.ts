import { lifecycleRoute } from "~/edge/box-route.server";

const route = lifecycleRoute("resume");

export const loader = route.loader, action = route.action;
