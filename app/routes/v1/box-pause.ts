import { lifecycleRoute } from "~/edge/box-route.server";

const route = lifecycleRoute("pause");

export const loader = route.loader, action = route.action;
