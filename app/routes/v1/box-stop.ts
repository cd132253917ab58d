import { lifecycleRoute } from "~/edge/box-route.server";
import { stopBox } from "~/models/box.server";

const route = lifecycleRoute(stopBox, "stopping the box");

export const loader = route.loader, action = route.action;
