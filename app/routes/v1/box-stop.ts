import { lifecycleRoute } from "~/edge/box-route.server";

const route = lifecycleRoute("stop");

export const loader = route.loader, action = route.action;
