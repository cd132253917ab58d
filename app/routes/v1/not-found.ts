import { notFound } from "~/utils/api-error.server";
import { errorResponse } from "~/utils/api-error.server";

const answer = ({ request }: { request: Request }) =>
  errorResponse(notFound(`no route ${request.method} ${new URL(request.url).pathname}`));

export const loader = answer;
export const action = answer;
