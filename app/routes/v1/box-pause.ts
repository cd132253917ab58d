import { lifecycleRoute } from "~/edge/box-route.server";
import { pauseBox } from "~/models/box.server";

const route = lifecycleRoute(pauseBox, "pausing the box");

export const loader = route.loader, action = route.action;
