import { runningBoxOf } from "~/edge/box-route.server";
import { refuseQuery, v1 } from "~/edge/route.server";
import { allTabs } from "~/models/page-browser.server";

// GET /v1/boxes/{id}/pages: every screen's tabs (front tab first on each screen), each with its
// `screen`, as the agent names them (id, label from open_url, url, title, active).
const route = v1({
  GET: async (args) => {
    const { box } = await runningBoxOf(args);
    refuseQuery(args.request);
    return { tabs: await allTabs(box) };
  },
});

export const loader = route.loader, action = route.action;
