import { lifecycleRoute } from "~/edge/box-route.server";
import { resumeBox } from "~/models/box.server";

const route = lifecycleRoute(resumeBox);

export const loader = route.loader, action = route.action;
