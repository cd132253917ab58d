import { boxWrite } from "~/edge/box-route.server";
import { v1 } from "~/edge/route.server";
import { installApps } from "~/models/batch.server";
import { AppsSchema } from "~/protocol/api-box";

const route = v1({
  POST: async (args) => {
    const { box, body } = await boxWrite(args, AppsSchema, "installing apps");
    return installApps(box, body.apps);
  },
});

export const loader = route.loader, action = route.action;
